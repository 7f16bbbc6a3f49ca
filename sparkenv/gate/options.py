"""The gate's own options, declared once (sparkenv/core/optionspec.py): the typer command (gate/commands.py)
and the fast path before every workload (gate/fastpath.py) read GATE; GateArgs (gate/entry.py) has a
field of the same name for each (a test keeps them in step). Defaults live here only. The watcher's
options are here too: `sparkenv watch` (watch/commands.py) and `gate --watch` share them."""

from __future__ import annotations

from sparkenv.core.optionspec import DUMP_FACTS, FACTS, Option

POLICY = Option(
    "policy",
    ("--policy",),
    metavar="strict|warn|off",
    envvar="SPARKENV_GATE",
    help="strict: a FAIL stops the start (exit 1); warn: report and start anyway (default); off: start at "
    "once, no checks. Also $SPARKENV_GATE.",
)
NEED_GB = Option(
    "need_gb",
    ("--need-gb",),
    float,
    default=0.0,
    metavar="GIB",
    help="Memory the run needs: G3 warns when MemAvailable is lower.",
)
SAMPLE = Option(
    "sample",
    ("--sample",),
    float,
    default=0.0,
    metavar="SECONDS",
    help="G4: sample temperature and power over this window.",
)
DEEP = Option(
    "deep",
    ("--deep",),
    bool,
    default=False,
    envvar="SPARKENV_GATE_DEEP",
    help="Also run the live CUDA probe: import torch in an isolated process, a first CUDA operation, a "
    "flash-attn call (seconds: torch's import). Use it on the first start of a new image, in an image's CI "
    "and after a driver update. Also $SPARKENV_GATE_DEEP=1.",
)
DEEP_CACHE = Option(
    "deep_cache",
    ("--deep-cache",),
    metavar="DIR",
    envvar="SPARKENV_GATE_DEEP_CACHE",
    help="With --deep: remember a passed deep probe in DIR (a volume a fleet shares), keyed by image, "
    "driver and GPU UUID, so each combination pays it once. Also $SPARKENV_GATE_DEEP_CACHE.",
)
BANDWIDTH = Option(
    "bandwidth",
    ("--bandwidth",),
    bool,
    default=False,
    help="G5: measure a device memory copy (implies --deep).",
)
IMPORT_UNSLOTH = Option(
    "import_unsloth",
    ("--import-unsloth",),
    bool,
    default=False,
    help="G2: import Unsloth (slow, ~25 s) to confirm its attention dispatch picks SDPA (implies --deep).",
)
LINK_TEST = Option(
    "link_test",
    ("--link-test",),
    bool,
    default=False,
    help="G10, multi-node launches: time one all-reduce between the nodes (NCCL on GPUs, gloo on CPUs) "
    "after they agree, and warn when it is below the link's expected bandwidth.",
)
PYTHON = Option(
    "python",
    ("--python",),
    metavar="PATH",
    help="Interpreter whose torch is checked. Default: this one.",
)
DEADLINE = Option(
    "deadline",
    ("--deadline",),
    float,
    default=25.0,
    metavar="SECONDS",
    help="One deadline for all probes, in seconds (finite, > 0): the gate reports and starts the workload "
    "within it (+1 s) whatever a probe does.",
)
WATCH = Option(
    "watch",
    ("--watch",),
    bool,
    default=False,
    envvar="SPARKENV_GATE_WATCH",
    help="After the checks, keep a watcher beside the workload: G3, G4 and G6 judged over time, one G-line "
    "per condition on stderr, a record that survives a hard power-off, a metrics textfile and a plot "
    "(sparkenv watch --help). The gate stays as the workload's parent, passing on every signal and "
    "returning its exit status once the watcher's summary is written (under any PID 1, docker's --init "
    "included). Also "
    "$SPARKENV_GATE_WATCH=1.",
)
ATTEST = Option(
    "attest",
    ("--attest",),
    float,
    default=0.0,
    metavar="SECONDS",
    help="For the first SECONDS after the workload imports torch, record which GPU kernels it runs (torch's "
    "profiler, in the workload's own Python), then stop and free it: the attention backend (G2), PTX "
    "JIT-compiled, GPU operators on the CPU (G7), said on stderr when the window ends (sparkenv attest "
    "--help). Records go to $SPARKENV_ATTEST_DIR (default ./sparkenv-attest).",
)


# The watcher's options, as `sparkenv watch` spells them (--dir, --interval, --policy); the gate spells the
# same options --watch-dir, --watch-interval and --watch-policy (`in_the_gate`), with the same help and
# variable. Declared here, not in watch/: the gate's start imports nothing of the watcher without --watch.
WATCHER_DIR = Option(
    "dir",
    ("--dir",),
    metavar="DIR",
    envvar="SPARKENV_WATCH_DIR",
    help="Where the record, the metrics textfile and the plot go (default ./sparkenv-watch). Also "
    "$SPARKENV_WATCH_DIR.",
)
WATCHER_INTERVAL = Option(
    "interval", ("--interval",), float, metavar="SECONDS", help="Seconds between readings (default 2)."
)
WATCHER_POLICY = Option(
    "policy",
    ("--policy",),
    metavar="report|stop",
    help="report (default): say what is seen. stop: send the workload SIGTERM, saying why, before "
    "predicted memory exhaustion or near the temperature shutdown point.",
)


def in_the_gate(option: Option) -> Option:
    """The option as `sparkenv gate` spells it: --watch-<name>, effective with --watch."""
    return option._replace(
        name=f"watch_{option.name}",
        flags=tuple(f"--watch-{f.removeprefix('--')}" for f in option.flags),
        help=f"With --watch: {option.help[0].lower()}{option.help[1:]}",
    )


GATE = (
    POLICY,
    NEED_GB,
    SAMPLE,
    DEEP,
    DEEP_CACHE,
    BANDWIDTH,
    IMPORT_UNSLOTH,
    LINK_TEST,
    DUMP_FACTS,
    FACTS,
    PYTHON,
    DEADLINE,
    WATCH,
    *(in_the_gate(o) for o in (WATCHER_DIR, WATCHER_INTERVAL, WATCHER_POLICY)),
    ATTEST,
)  # in --help's order

"""`sparkenv gate`: the image entrypoint. Checks the live machine, then execs the workload."""

from __future__ import annotations

from typing import Annotated, Optional

import typer

from sparkenv import cli_options as opts


def register(app: typer.Typer) -> None:
    app.command(context_settings={"help_option_names": ["-h", "--help"]})(gate)


@opts.reporting(gate=True)
def gate(
    workload: Annotated[
        Optional[list[str]],  # noqa: UP045
        typer.Argument(
            metavar="[-- CMD ARGS...]", help="The workload to exec after the checks.", show_default=False
        ),
    ] = None,
    policy: Annotated[
        Optional[str],  # noqa: UP045
        typer.Option(
            "--policy",
            metavar="strict|warn|off",
            envvar="SPARKENV_GATE",
            help="strict: a FAIL stops the start (exit 1); warn: report and start anyway (default); "
            "off: start at once, no checks. Also $SPARKENV_GATE.",
        ),
    ] = None,
    need_gb: Annotated[
        float,
        typer.Option(
            "--need-gb", metavar="GIB", help="Memory the run needs: G3 warns when MemAvailable is lower."
        ),
    ] = 0.0,
    sample: Annotated[
        float,
        typer.Option(
            "--sample", metavar="SECONDS", help="G4: sample temperature and power over this window."
        ),
    ] = 0.0,
    deep: Annotated[
        bool,
        typer.Option(
            "--deep",
            envvar="SPARKENV_GATE_DEEP",
            help="Also run the live CUDA probe: import torch in an isolated process, a first CUDA operation, "
            "a flash-attn call (seconds: torch's import). Use it on the first start of a new image, in an "
            "image's CI and after a driver update. Also $SPARKENV_GATE_DEEP=1.",
        ),
    ] = False,
    deep_cache: Annotated[
        Optional[str],  # noqa: UP045
        typer.Option(
            "--deep-cache",
            metavar="DIR",
            envvar="SPARKENV_GATE_DEEP_CACHE",
            help="With --deep: remember a passed deep probe in DIR (a volume a fleet shares), keyed by "
            "image, driver and GPU UUID, so each combination pays it once. Also $SPARKENV_GATE_DEEP_CACHE.",
        ),
    ] = None,
    bandwidth: Annotated[
        bool, typer.Option("--bandwidth", help="G5: measure a device memory copy (implies --deep).")
    ] = False,
    import_unsloth: Annotated[
        bool,
        typer.Option(
            "--import-unsloth",
            help="G2: import Unsloth (slow, ~25 s) to confirm its attention dispatch picks SDPA "
            "(implies --deep).",
        ),
    ] = False,
    link_test: Annotated[
        bool,
        typer.Option(
            "--link-test",
            help="G10, multi-node launches: time one all-reduce between the nodes (NCCL on GPUs, gloo on "
            "CPUs) after they agree, and warn when it is below the link's expected bandwidth.",
        ),
    ] = False,
    dump_facts: Annotated[
        Optional[str],  # noqa: UP045
        typer.Option(
            "--dump-facts", metavar="FILE", help="Write the facts snapshot (attach it to a bug report)."
        ),
    ] = None,
    facts: Annotated[
        Optional[str],  # noqa: UP045
        typer.Option("--facts", metavar="FILE", help="Replay a snapshot instead of probing this machine."),
    ] = None,
    python: Annotated[
        Optional[str],  # noqa: UP045
        typer.Option(
            "--python", metavar="PATH", help="Interpreter whose torch is checked. Default: this one."
        ),
    ] = None,
    deadline: Annotated[
        float,
        typer.Option(
            "--deadline",
            metavar="SECONDS",
            help="One deadline for all probes, in seconds (finite, > 0): the gate reports and starts the "
            "workload within it (+1 s) whatever a probe does.",
        ),
    ] = 25.0,
    watch: Annotated[
        bool,
        typer.Option(
            "--watch",
            envvar="SPARKENV_GATE_WATCH",
            help="After the checks, keep a watcher beside the workload: G3, G4 and G6 judged over time, one "
            "G-line per condition on stderr, a record that survives a hard power-off, a metrics textfile "
            "and a plot (sparkenv watch --help). The workload keeps its PID, signals and exit status. "
            "Also $SPARKENV_GATE_WATCH=1.",
        ),
    ] = False,
    watch_dir: Annotated[
        Optional[str],  # noqa: UP045
        typer.Option(
            "--watch-dir",
            metavar="DIR",
            envvar="SPARKENV_WATCH_DIR",
            help="With --watch: where the record, metrics and plot go (default ./sparkenv-watch). Also "
            "$SPARKENV_WATCH_DIR.",
        ),
    ] = None,
    watch_interval: Annotated[
        Optional[float],  # noqa: UP045
        typer.Option(
            "--watch-interval", metavar="SECONDS", help="With --watch: seconds between readings (2)."
        ),
    ] = None,
    watch_policy: Annotated[
        Optional[str],  # noqa: UP045
        typer.Option(
            "--watch-policy",
            metavar="report|stop",
            help="With --watch: report (default), or stop: send the workload SIGTERM, saying why, before "
            "predicted memory exhaustion or near the temperature shutdown point.",
        ),
    ] = None,
    *,
    reporting: opts.ReportOptions,
) -> None:
    """Check all ten failure modes on this machine, then start the workload.

    By default nothing is imported or started: torch's CUDA linkage is proven from its files (its
    version label and libtorch_cuda.so's libraries resolved the way the loader will), the GPU, driver,
    temperature, power and GPU processes come from NVML in-process, memory from /proc/meminfo. All
    probes run at once under one --deadline. --deep adds the isolated torch process (first CUDA
    operation, flash-attn call). The ten checks are pure functions of the facts snapshot, so
    `--dump-facts` / `--facts` replay a machine exactly.

    With a workload after `--`, the G-lines go to stderr and the workload is exec'd: its signals and exit
    status are its own. Off a Spark the gate still runs and says platform: generic-nvidia or no-gpu.

    Examples:

      sparkenv gate                                   # check and report, exit 1 on a FAIL

      sparkenv gate --policy strict -- python train.py --epochs 3

      sparkenv gate --deep --sample 10 --bandwidth --dump-facts facts.json

      sparkenv gate --watch --watch-dir /logs -- python train.py   # G3/G4/G6 over the whole run
    """
    from sparkenv.gate import entry

    code = entry.run(
        entry.GateArgs(
            workload=list(workload or []),
            policy=policy,
            need_gb=need_gb,
            sample=sample,
            bandwidth=bandwidth,
            import_unsloth=import_unsloth,
            deep=deep,
            link_test=link_test,
            deep_cache=deep_cache,
            dump_facts=dump_facts,
            facts=facts,
            python=python,
            deadline=deadline,
            watch=watch,
            watch_dir=watch_dir,
            watch_interval=watch_interval,
            watch_policy=watch_policy,
            reporting=reporting,
        )
    )
    entry.finish(code)

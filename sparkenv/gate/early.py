"""The gate's slowest probes, started as soon as the arguments are parsed, before the rest of the gate is
imported: NVML (pynvml's import, then driver calls that wait on the kernel module) and the reading of the
workload's interpreter (its packages, torch's files, Triton's ptxas), each in a child forked from the
gate (core/pool.py: on another core, so their CPU no longer takes turns with the gate's own under the
GIL; a thread where no child can be forked), and under --deep the isolated torch process (seconds:
import torch, the first CUDA operation). All overlap with everything the gate does after;
probes.gather collects them under its one deadline, and runs them itself where they were not started
here (the typer command, --facts, --sample, policy off).

Only the fast path (sparkenv/cli/entry.py, through gate/entry.start_early) starts them, after the same
validation the run does, so a bad argument never leaves a process behind; every child is registered
with sparkenv/core/children.py, so signals and the deadline kill it."""

from __future__ import annotations

import os
import threading
import time
from collections.abc import Callable
from typing import Any


class _Thread:
    """The fallback where no child can be forked: the probe in a daemon thread of the gate."""

    def __init__(self, fn: Callable[[], Any]) -> None:
        self.done = threading.Event()
        self.value: Any = None
        self.error: Exception | None = None
        threading.Thread(target=self._run, args=(fn,), name="sparkenv-probe-early", daemon=True).start()

    def _run(self, fn: Callable[[], Any]) -> None:
        try:
            self.value = fn()
        except Exception as exc:  # reported by the probe that asks, as its own error
            self.error = exc
        finally:
            self.done.set()

    def result(self, deadline: float) -> Any:
        self.done.wait(max(0.0, deadline - time.monotonic()))
        if self.error is not None:
            raise self.error
        return self.value


_pids: set[int] = set()  # every child forked here


def _started(fn: Callable[[], Any]) -> Any:
    """fn running beside the gate: in a forked child (core/pool.py), else in a thread."""
    from sparkenv.core import pool

    try:
        child = pool.once(fn)
    except (OSError, RuntimeError):
        return _Thread(fn)
    _pids.add(child.pid)
    return child


def _gpu_probe() -> Any:
    from sparkenv.environment import nvml

    return nvml.probe(shutdown=False)  # the child's exit closes NVML, after it has answered


_gpu: Any = None  # pool.Worker or _Thread
_reads: dict[tuple[Any, ...], Any] = {}  # the same, per group of probes (probes.interpreter_facts …)
_torch: Any = None  # orchestrate.Bounded, or None


def start(gpu: bool, torch: list[str] | None) -> None:
    """Start NVML's probe beside the gate (`gpu`) and the torch process for `torch` (its command line,
    torch_argv's), for arguments already validated (gate/entry.py's start_early decides which)."""
    global _gpu, _torch
    if gpu:
        _gpu = _started(_gpu_probe)
    if torch is not None:
        from sparkenv.gate import orchestrate

        try:
            _torch = orchestrate.Bounded(torch)
        except OSError:
            _torch = None  # the probe tries again and reports why it cannot run


# The live checks, by G-number, in groups of about even cost (importing the rule modules and loading
# the data they read; judging: G7 and G10 the slowest; benchmarks/gate_exec.py).
# Each group's modules are imported by a worker forked at the start, while the probes run; it judges
# the facts once they are in (gate/run.py). A G-number in no group is judged by the gate itself.
CHECK_GROUPS: tuple[tuple[str, ...], ...] = (
    ("G8",),
    ("G1",),
    ("G7",),
    ("G10",),
    ("G2", "G9"),
    ("G3", "G4", "G5", "G6"),
)
MIN_CPUS = 4  # fewer: the workers would take turns with the probes and the gate on the same cores
_checkers: dict[tuple[str, ...], Any] = {}  # group -> pool.Worker (fed the facts)


def start_checks(deadline_s: float, judge: Callable[[tuple[str, ...], Callable[[], Any]], Any]) -> None:
    """Fork the check workers, one a group of CHECK_GROUPS: each computes `judge(group, receive)`
    (gate/entry.py's, which imports the checks in the worker), leaving by SIGALRM past the gate's
    deadline, whatever it does, and as soon as the gate ends without sending the facts."""
    from sparkenv.core import pool

    for group in CHECK_GROUPS:
        try:
            child = pool.once(
                lambda receive, g=group: judge(g, receive), feed=True, alarm_s=int(deadline_s) + 2
            )
        except (OSError, RuntimeError):
            return  # the gate judges the rest itself
        _checkers[group] = child
        _pids.add(child.pid)


def checkers() -> dict[tuple[str, ...], Any]:
    """The check workers started early, by group (taken: each is fed and asked once)."""
    found = dict(_checkers)
    _checkers.clear()
    return found


def pending_checkers() -> list[Any]:
    """The check workers not yet taken: spared when the probes' children are killed."""
    return list(_checkers.values())


def pending_groups() -> list[tuple[str, ...]]:
    """The groups of checks the workers not yet taken will judge."""
    return list(_checkers)


def interpreter_key(python: str, read_kernels: bool, part: str = "") -> tuple[Any, ...]:
    """The group of probes that read the workload's interpreter (probes.interpreter_facts): all of
    them, or one `part` of INTERPRETER_PARTS."""
    return ("interpreter", python, read_kernels, part)


# The interpreter's probes in two children, side by side: torch's files, and the distributions (the
# listing that dists and kernel_coverage share). In one child they were the last of the probes to
# answer (benchmarks/gate_profile.py).
INTERPRETER_PARTS: dict[str, tuple[str, ...]] = {
    "torch": ("torch_static",),
    "packages": ("dists", "kernel_coverage"),
}


HOST = ("host",)  # the group that reads the machine (probes.host_facts)


# Every section a probe can add to the facts (probes.gather's probes, the --deep torch process, the
# NVFP4 kernels): the check workers warm their checks up on facts with each of them empty (gate/run.py).
SECTIONS = (
    "gpu",
    "driver",
    "meminfo",
    "processes",
    "container",
    "loader",
    "dists",
    "configs",
    "torch_static",
    "multinode",
    "torch",
    "kernels",
    "kernel_coverage",
)


def start_group(key: tuple[Any, ...], read: Callable[[], dict[str, Any]]) -> None:
    """Start a group of probes beside the gate: `read` gives each probe's outcome (pool.caught's)."""
    _reads[key] = _started(read)


def child_pids() -> set[int]:
    """The gate's own forked probes: not servers the processes probe should report."""
    return set(_pids)


def gpu(deadline: float) -> Any:
    """NVML's section from the early start (waiting for it until `deadline`), else None."""
    global _gpu
    started, _gpu = _gpu, None
    if started is None:
        return None
    return started.result(deadline)


def group(key: tuple[Any, ...], deadline: float) -> dict[str, Any] | None:
    """A group's outcomes from the early start, waiting for them until `deadline`; None when it was not
    started or is late. Every probe of the group that asks gets the same answer."""
    started = _reads.get(key)
    found: dict[str, Any] | None = None if started is None else started.result(deadline)
    return found


def torch(argv: list[str]) -> Any:
    """The torch process started early for exactly this command line, else None."""
    global _torch
    started, _torch = _torch, None
    return started if started is not None and started.argv == argv else None


def torch_argv(python: str, bandwidth: bool, import_unsloth: bool) -> list[str]:
    """The isolated torch probe's command line (gate/torch_probe.py under the workload's interpreter)."""
    from sparkenv.knowledge import packages

    argv = [python, "-X", "utf8", os.path.join(os.path.dirname(__file__), "torch_probe.py"), "--flash"]
    if bandwidth:
        argv.append("--bandwidth")
    if import_unsloth:
        argv.append("--import-unsloth")
    pkgs = packages()
    return [*argv, f"--sdpa-module={pkgs.sdpa_hook_module}", f"--sdpa-pth={pkgs.sdpa_override_pth}"]

"""The gate's two slowest probes, started as soon as the arguments are parsed, before the rest of the gate
is imported: NVML (pynvml's import, then driver calls that wait on the kernel module) in a daemon thread,
and under --deep the isolated torch process (seconds: import torch, the first CUDA operation). Both
overlap with everything the gate does after; probes.gather collects them under its one deadline, and
runs them itself where they were not started here (the typer command, --facts, --sample, policy off).

Only the fast path (sparkenv/entry.py, through gate/entry.start_early) starts them, after the same
validation the run does, so a bad argument never leaves a process behind; the torch process is
registered with orchestrate like every child, so signals and the deadline kill it."""

from __future__ import annotations

import threading
import time
from pathlib import Path
from typing import Any


class _Gpu:
    def __init__(self) -> None:
        self.done = threading.Event()
        self.value: Any = None
        self.error: Exception | None = None

    def run(self) -> None:
        from sparkenv.gate import nvml

        try:
            self.value = nvml.probe()
        except Exception as exc:  # reported by the gpu probe as its own error
            self.error = exc
        finally:
            self.done.set()


_gpu: _Gpu | None = None
_torch: Any = None  # orchestrate.Bounded, or None


def start(gpu: bool, torch: list[str] | None) -> None:
    """Start NVML's probe in a daemon thread (`gpu`) and the torch process for `torch` (its command line,
    torch_argv's), for arguments already validated (gate/entry.py's start_early decides which)."""
    global _gpu, _torch
    if gpu:
        _gpu = _Gpu()
        threading.Thread(target=_gpu.run, name="sparkenv-probe-gpu-early", daemon=True).start()
    if torch is not None:
        from sparkenv.gate import orchestrate

        try:
            _torch = orchestrate.Bounded(torch)
        except OSError:
            _torch = None  # the probe tries again and reports why it cannot run


def gpu(deadline: float) -> Any:
    """NVML's section from the early start (waiting for it until `deadline`), else None."""
    global _gpu
    started, _gpu = _gpu, None
    if started is None:
        return None
    started.done.wait(max(0.0, deadline - time.monotonic()))
    if started.error is not None:
        raise started.error
    return started.value


def torch(argv: list[str]) -> Any:
    """The torch process started early for exactly this command line, else None."""
    global _torch
    started, _torch = _torch, None
    return started if started is not None and started.argv == argv else None


def torch_argv(python: str, bandwidth: bool, import_unsloth: bool) -> list[str]:
    """The isolated torch probe's command line (gate/torch_probe.py under the workload's interpreter)."""
    from sparkenv.knowledge import packages

    argv = [python, "-X", "utf8", str(Path(__file__).with_name("torch_probe.py")), "--flash"]
    if bandwidth:
        argv.append("--bandwidth")
    if import_unsloth:
        argv.append("--import-unsloth")
    pkgs = packages()
    return [*argv, f"--sdpa-module={pkgs.sdpa_hook_module}", f"--sdpa-pth={pkgs.sdpa_override_pth}"]

"""The workload's environment under attest: the probe first on PYTHONPATH (it loads as `sitecustomize` in
every Python the workload starts that reads the environment: not under -I or -E), its window, and a fresh
private CUDA JIT cache whose filling says the driver compiled PTX."""

from __future__ import annotations

import os
import tempfile
import time
from collections.abc import Mapping

from sparkenv.attest.inject import sitecustomize as probe
from sparkenv.knowledge import kernel_paths

PROBE_DIR = os.path.dirname(os.path.abspath(probe.__file__))
DEFAULT_FOLDER = "sparkenv-attest"
JIT_CACHE_MAX = 4 << 30  # CUDA_CACHE_MAXSIZE's largest value: nothing the window compiles is evicted


def run_folder(folder: str) -> str:
    """A fresh folder for one run's records under `folder`: every record in it is this workload's."""

    path = os.path.join(folder, time.strftime("%Y%m%dT%H%M%SZ", time.gmtime()) + f"-{os.getpid()}")
    os.makedirs(path, exist_ok=True)
    return path


def environment(base: Mapping[str, str], folder: str, seconds: float, steps: int = 0) -> dict[str, str]:
    """`base` with the probe switched on for a window of `seconds` (or `steps` optimizer steps, whichever
    ends first), records into `folder`."""

    env = dict(base)
    path = env.get("PYTHONPATH", "")
    env["PYTHONPATH"] = PROBE_DIR + (os.pathsep + path if path else "")
    env[probe.DIR] = os.path.abspath(folder)
    env[probe.SECONDS] = repr(float(seconds))
    env[probe.STEPS] = str(int(steps))
    env[probe.MARKERS] = "|".join(kernel_paths().probe.markers)
    env["CUDA_CACHE_PATH"] = tempfile.mkdtemp(prefix="sparkenv-attest-jit-")
    env["CUDA_CACHE_MAXSIZE"] = str(JIT_CACHE_MAX)
    env.pop("CUDA_CACHE_DISABLE", None)
    return env


def without_probe(env: Mapping[str, str]) -> dict[str, str]:
    """`env` as sparkenv's own processes beside the workload get it: no probe."""
    out = {k: v for k, v in env.items() if not k.startswith("SPARKENV_ATTEST_")}
    kept = [p for p in out.get("PYTHONPATH", "").split(os.pathsep) if p and p != PROBE_DIR]
    if kept:
        out["PYTHONPATH"] = os.pathsep.join(kept)
    else:
        out.pop("PYTHONPATH", None)
    return out


def jit_cache(folder: str | None) -> dict[str, object]:
    """What the private JIT cache holds now (the probe's own count, from outside)."""
    return probe.jit_cache(folder)

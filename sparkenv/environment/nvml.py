"""The GPU as NVML sees it, through NVIDIA's Python binding (nvidia-ml-py, module `pynvml`), in-process:
no nvidia-smi process per query, and typed values instead of parsed text.

The facts keep nvidia-smi's field names ("temperature.gpu", "power.draw" in W, "memory.total" in MiB …),
so snapshots recorded with nvidia-smi replay through the same checks. A value NVML does not support on
this GPU (GB10's memory: NOT_SUPPORTED) is None, never an error; a missing libnvidia-ml is
{"available": False, "error": …}.
"""

from __future__ import annotations

import contextlib
import os
import time
from collections.abc import Callable
from typing import Any

from sparkenv.environment import ldcache

MIB = 1 << 20


LIBRARY = "libnvidia-ml.so.1"


def library_path() -> str | None:
    """Where dlopen will find libnvidia-ml (LD_LIBRARY_PATH, the loader cache, default folders), or None.

    Importing pynvml costs more than the rest of the gate (it defines its ctypes structures at import);
    on a machine without the driver, this look-up says so without paying for it."""

    machine = os.uname().machine  # what platform.machine() says on Linux, without importing platform
    machine = {"amd64": "x86_64", "arm64": "aarch64"}.get(machine.lower(), machine)
    found, _ = ldcache.resolve(LIBRARY, __file__, (), (), machine)
    return found


def probe(sample_s: float = 0.0, deadline: float | None = None, shutdown: bool = True) -> dict[str, Any]:
    """The GPU section of the facts. Without `shutdown` NVML stays open: for a process that exits right
    after (the gate's forked probe, whose exit closes NVML sooner than the call, off the gate's path)."""
    if library_path() is None:
        return {
            "available": False,
            "source": "nvml",
            "error": f"{LIBRARY} not found: no NVIDIA driver "
            "visible here (run the container with --gpus all)",
        }
    try:
        import pynvml
    except ImportError:
        return {
            "available": False,
            "source": "nvml",
            "error": "nvidia-ml-py is not installed (pip install nvidia-ml-py)",
        }
    try:
        pynvml.nvmlInit()
    except pynvml.NVMLError as exc:
        return {"available": False, "source": "nvml", "error": _init_error(pynvml, exc)}
    try:
        return _read(pynvml, sample_s, deadline)
    finally:
        if shutdown:
            with contextlib.suppress(pynvml.NVMLError):
                pynvml.nvmlShutdown()


def _init_error(pynvml: Any, exc: Exception) -> str:
    code = getattr(exc, "value", None)
    if code == pynvml.NVML_ERROR_LIBRARY_NOT_FOUND:
        return (
            "libnvidia-ml.so.1 not found: no NVIDIA driver visible here (run the container with --gpus all)"
        )
    if code == pynvml.NVML_ERROR_DRIVER_NOT_LOADED:
        return "the NVIDIA driver is not loaded"
    return f"NVML init failed: {exc}"


def _get(fn: Callable[[], Any]) -> Any:
    """A value, or None where this GPU or driver does not offer it (NOT_SUPPORTED, an older driver)."""
    import pynvml

    try:
        return fn()
    except pynvml.NVMLError:
        return None


def _read(nv: Any, sample_s: float, deadline: float | None) -> dict[str, Any]:
    cuda = _get(nv.nvmlSystemGetCudaDriverVersion_v2)
    out: dict[str, Any] = {
        "available": True,
        "source": "nvml",
        "driver_version": _get(nv.nvmlSystemGetDriverVersion),
        "cuda_driver_version": f"{cuda // 1000}.{cuda % 1000 // 10}" if isinstance(cuda, int) else None,
        "gpus": [],
        "apps": [],
    }
    count = _get(nv.nvmlDeviceGetCount) or 0
    handles = [h for i in range(count) if (h := _get(lambda i=i: nv.nvmlDeviceGetHandleByIndex(i)))]
    for index, h in enumerate(handles):
        out["gpus"].append(_gpu(nv, h, index, out["driver_version"]))
        apps = _apps(nv, h, index)
        if isinstance(apps, str):
            out["apps_error"] = apps
        else:
            out["apps"] += apps
    if sample_s > 0 and handles:
        out["samples"] = _sample(nv, handles[0], sample_s, deadline)
    return out


def _gpu(nv: Any, h: Any, index: int, driver: str | None) -> dict[str, Any]:
    cap = _get(lambda: nv.nvmlDeviceGetCudaComputeCapability(h))
    mem = _get(lambda: nv.nvmlDeviceGetMemoryInfo(h))
    util = _get(lambda: nv.nvmlDeviceGetUtilizationRates(h))
    reasons = _get(lambda: nv.nvmlDeviceGetCurrentClocksEventReasons(h))
    if reasons is None:
        reasons = _get(lambda: nv.nvmlDeviceGetCurrentClocksThrottleReasons(h))
    return {
        "index": index,
        "name": _get(lambda: nv.nvmlDeviceGetName(h)),
        "uuid": _get(lambda: nv.nvmlDeviceGetUUID(h)),
        "compute_cap": f"{cap[0]}.{cap[1]}" if cap else None,
        "driver_version": driver,
        "temperature.gpu": _get(lambda: nv.nvmlDeviceGetTemperature(h, nv.NVML_TEMPERATURE_GPU)),
        "power.draw": _watts(_get(lambda: nv.nvmlDeviceGetPowerUsage(h))),
        "power.limit": _watts(_get(lambda: nv.nvmlDeviceGetPowerManagementLimit(h))),
        "enforced.power.limit": _watts(_get(lambda: nv.nvmlDeviceGetEnforcedPowerLimit(h))),
        "memory.total": round(mem.total / MIB) if mem is not None else None,
        "memory.used": round(mem.used / MIB) if mem is not None else None,
        "utilization.gpu": util.gpu if util is not None else None,
        "clocks.sm": _get(lambda: nv.nvmlDeviceGetClockInfo(h, nv.NVML_CLOCK_SM)),
        "clocks.max.sm": _get(lambda: nv.nvmlDeviceGetMaxClockInfo(h, nv.NVML_CLOCK_SM)),
        "clocks_event_reasons.active": f"0x{reasons:016x}" if isinstance(reasons, int) else None,
    }


def _apps(nv: Any, h: Any, index: int) -> list[dict[str, Any]] | str:
    try:
        procs = nv.nvmlDeviceGetComputeRunningProcesses(h)
    except nv.NVMLError as exc:
        return f"running compute processes: {exc}"
    local = pids_are_host_pids()
    apps = []
    for p in procs:
        used = getattr(p, "usedGpuMemory", None)
        apps.append(
            {
                "gpu": index,
                "pid": int(p.pid),
                # NVML reports host PIDs: inside a container's PID namespace the same number is
                # another process (or none), so a name is only read where PIDs are the host's.
                "process_name": _comm(p.pid) if local else None,
                "used_memory": round(used / MIB) if isinstance(used, int) else None,
                "host_pid_visible": local,
            }
        )
    return apps


def pids_are_host_pids() -> bool:
    """True when this process sees the host's PID namespace (NSpid has one entry)."""
    try:
        with open("/proc/self/status", encoding="ascii", errors="replace") as fh:
            for line in fh:
                if line.startswith("NSpid:"):
                    return len(line.split()) == 2
    except OSError:
        pass
    return False


def _comm(pid: int) -> str | None:
    try:
        with open(f"/proc/{pid}/comm", encoding="utf-8", errors="replace") as fh:
            return fh.read(256).strip() or None
    except OSError:
        return None


def _watts(milliwatts: Any) -> float | None:
    return round(milliwatts / 1000.0, 2) if isinstance(milliwatts, (int, float)) else None


def _sample(nv: Any, h: Any, window_s: float, deadline: float | None) -> list[dict[str, Any]]:
    samples = []
    end = time.monotonic() + window_s
    if deadline is not None:
        end = min(end, deadline - 0.5)
    while time.monotonic() < end:
        t = time.monotonic()
        util = _get(lambda: nv.nvmlDeviceGetUtilizationRates(h))
        samples.append(
            {
                "t": round(t, 2),
                "temperature.gpu": _get(lambda: nv.nvmlDeviceGetTemperature(h, nv.NVML_TEMPERATURE_GPU)),
                "power.draw": _watts(_get(lambda: nv.nvmlDeviceGetPowerUsage(h))),
                "utilization.gpu": util.gpu if util is not None else None,
            }
        )
        time.sleep(max(0.0, 0.5 - (time.monotonic() - t)))
    return samples


class ProcessUse:
    """NVML opened once for a window, read per sample for a set of processes (sparkenv attest's record of
    a workload without torch): each one's GPU memory (running compute processes) and its SM utilisation
    since the last sample (nvmlDeviceGetProcessUtilization). `error` says why nothing can be read."""

    def __init__(self) -> None:
        self.error: str | None = None
        self.nv: Any = None
        self.handles: list[Any] = []
        self.host_pids = pids_are_host_pids()
        self._since = 0  # NVML's microsecond clock: utilisation samples newer than this
        if library_path() is None:
            self.error = f"{LIBRARY} not found: no NVIDIA driver visible here"
            return
        try:
            import pynvml
        except ImportError:
            self.error = "nvidia-ml-py is not installed (pip install nvidia-ml-py)"
            return
        try:
            pynvml.nvmlInit()
        except pynvml.NVMLError as exc:
            self.error = _init_error(pynvml, exc)
            return
        self.nv = pynvml
        count = _get(pynvml.nvmlDeviceGetCount) or 0
        self.handles = [
            h for i in range(count) if (h := _get(lambda i=i: pynvml.nvmlDeviceGetHandleByIndex(i)))
        ]

    def sample(self, pids: set[int]) -> dict[str, Any]:
        """One reading: [pid, MiB] of the GPU memory each of `pids` holds, [pid, %] of the SM time each used
        since the last reading, how many other processes NVML lists, the device's utilisation."""
        nv, mine, sm, others, busiest = self.nv, {}, {}, set(), 0
        if nv is None:
            return {}
        for h in self.handles:
            for p in _get(lambda h=h: nv.nvmlDeviceGetComputeRunningProcesses(h)) or ():
                used = getattr(p, "usedGpuMemory", None)
                mib = round(used / MIB) if isinstance(used, int) else 0
                if int(p.pid) in pids:
                    mine[int(p.pid)] = mine.get(int(p.pid), 0) + mib
                else:
                    others.add(int(p.pid))
            for u in _get(lambda h=h: nv.nvmlDeviceGetProcessUtilization(h, self._since)) or ():
                busiest = max(busiest, int(u.timeStamp))
                if int(u.pid) in pids:
                    sm[int(u.pid)] = max(sm.get(int(u.pid), 0), int(u.smUtil))
        self._since = max(self._since, busiest)
        util = _get(lambda: nv.nvmlDeviceGetUtilizationRates(self.handles[0])) if self.handles else None
        return {
            "memory_mib": sorted([pid, mib] for pid, mib in mine.items()),
            "sm_percent": sorted([pid, pct] for pid, pct in sm.items()),
            "others": len(others),
            "gpu_util": util.gpu if util is not None else None,
        }

    def close(self) -> None:
        if self.nv is not None:
            with contextlib.suppress(self.nv.NVMLError):
                self.nv.nvmlShutdown()
            self.nv = None


__all__ = ["ProcessUse", "pids_are_host_pids", "probe"]

"""One reading of the machine for the watcher: NVML in-process (nvidia-ml-py, no CUDA context; its cost:
benchmarks/README.md, watch_overhead.py) and /proc. Nothing here judges; a value this GPU does not offer is
None."""

from __future__ import annotations

import contextlib
import os
import time
from typing import Any

from sparkenv.environment.nvml import library_path, pids_are_host_pids
from sparkenv.facts.timeseries import GpuProcess, GpuReading, Sample

MEMINFO = "/proc/meminfo"
PRESSURE = "/proc/pressure/memory"
NS = 1e9


class Sampler:
    """NVML initialised once for the watcher's life; `read(t0)` takes one Sample."""

    def __init__(self, workload_pid: int | None) -> None:
        self.workload_pid = workload_pid
        self.nv: Any = None
        self.handles: list[Any] = []
        self.error: str | None = None
        self.name: str | None = None
        self.shutdown: dict[int, float | None] = {}
        self.max_clock: dict[int, int | None] = {}
        self.known: dict[int, tuple[bool, tuple[str, ...]]] = {}  # pid -> (the workload's, argv)

        self.pids_local = pids_are_host_pids()
        if library_path() is None:
            self.error = "libnvidia-ml.so.1 not found: no NVIDIA driver visible here"
            return
        try:
            import pynvml

            pynvml.nvmlInit()
        except Exception as exc:  # ImportError, NVMLError: memory is still watched
            self.error = f"NVML unavailable: {exc}"
            return
        self.nv = pynvml
        count = self._get(pynvml.nvmlDeviceGetCount) or 0
        self.handles = [h for i in range(count) if (h := self._get(pynvml.nvmlDeviceGetHandleByIndex, i))]
        if self.handles:
            self.name = self._get(pynvml.nvmlDeviceGetName, self.handles[0])
        for i, h in enumerate(self.handles):
            c = self._get(
                pynvml.nvmlDeviceGetTemperatureThreshold, h, pynvml.NVML_TEMPERATURE_THRESHOLD_SHUTDOWN
            )
            self.shutdown[i] = float(c) if isinstance(c, (int, float)) and c > 0 else None
            self.max_clock[i] = self._get(pynvml.nvmlDeviceGetMaxClockInfo, h, pynvml.NVML_CLOCK_SM)

    def close(self) -> None:
        if self.nv is not None:
            with contextlib.suppress(Exception):
                self.nv.nvmlShutdown()
            self.nv = None

    def _get(self, fn: Any, *args: Any) -> Any:
        try:
            return fn(*args)
        except Exception:  # NVMLError: not supported here, or this driver lacks it
            return None

    def read(self, t0: float) -> Sample:
        wall = time.time()
        gpus, apps = [], []
        for i, h in enumerate(self.handles):
            gpus.append(self._gpu(i, h))
            apps += self._apps(i, h)
        mem = meminfo()
        some, full = pressure()
        cache = mem.get("Cached", 0) + mem.get("Buffers", 0) if "Cached" in mem else None
        return Sample(
            t=round(time.monotonic() - t0, 2),
            wall=round(wall, 3),
            gpus=tuple(gpus),
            apps=tuple(apps),
            mem_total_kb=mem.get("MemTotal"),
            mem_available_kb=mem.get("MemAvailable"),
            mem_free_kb=mem.get("MemFree"),
            page_cache_kb=cache,
            psi_some_avg10=some,
            psi_full_avg10=full,
        )

    def _gpu(self, i: int, h: Any) -> GpuReading:
        nv, get = self.nv, self._get
        util = get(nv.nvmlDeviceGetUtilizationRates, h)
        mem = get(nv.nvmlDeviceGetMemoryInfo, h)
        reasons = get(nv.nvmlDeviceGetCurrentClocksEventReasons, h)
        counters = self._counters(h)
        return GpuReading(
            index=i,
            temperature_c=get(nv.nvmlDeviceGetTemperature, h, nv.NVML_TEMPERATURE_GPU),
            power_w=_watts(get(nv.nvmlDeviceGetPowerUsage, h)),
            power_limit_w=_watts(get(nv.nvmlDeviceGetEnforcedPowerLimit, h)),
            sm_clock_mhz=get(nv.nvmlDeviceGetClockInfo, h, nv.NVML_CLOCK_SM),
            sm_clock_max_mhz=self.max_clock.get(i),
            utilization=util.gpu if util is not None else None,
            event_reasons=reasons if isinstance(reasons, int) else None,
            power_violation_s=self._violation(h, nv.NVML_PERF_POLICY_POWER),
            thermal_violation_s=self._violation(h, nv.NVML_PERF_POLICY_THERMAL),
            shutdown_c=self.shutdown.get(i),
            memory_used_mib=round(mem.used / (1 << 20)) if mem is not None else None,
            **counters,
        )

    def _violation(self, h: Any, policy: int) -> float | None:
        v = self._get(self.nv.nvmlDeviceGetViolationStatus, h, policy)
        return round(v.violationTime / NS, 3) if v is not None else None

    def _counters(self, h: Any) -> dict[str, float | None]:
        """The clock event reason counters nvidia-smi -q shows (ns), where the driver has them."""
        nv = self.nv
        wanted = {
            "sw_thermal_s": "NVML_FI_DEV_CLOCKS_EVENT_REASON_SW_THERM_SLOWDOWN",
            "hw_thermal_s": "NVML_FI_DEV_CLOCKS_EVENT_REASON_HW_THERM_SLOWDOWN",
            "hw_power_brake_s": "NVML_FI_DEV_CLOCKS_EVENT_REASON_HW_POWER_BRAKE_SLOWDOWN",
        }
        ids = {k: getattr(nv, name) for k, name in wanted.items() if hasattr(nv, name)}
        out: dict[str, float | None] = dict.fromkeys(wanted)
        values = self._get(nv.nvmlDeviceGetFieldValues, h, list(ids.values())) if ids else None
        for key, value in zip(ids, values or (), strict=False):
            if getattr(value, "nvmlReturn", 1) == 0:
                out[key] = round(value.value.ullVal / NS, 3)
        return out

    def _apps(self, i: int, h: Any) -> list[GpuProcess]:
        procs = self._get(self.nv.nvmlDeviceGetComputeRunningProcesses, h) or []
        if self.pids_local and self.workload_pid and any(int(p.pid) not in self.known for p in procs):
            tree = descendants(self.workload_pid)  # one pass over /proc, only when a new PID shows
            for p in procs:
                pid = int(p.pid)
                self.known.setdefault(pid, (pid in tree, _argv(pid)))
        out = []
        for p in procs:
            used = getattr(p, "usedGpuMemory", None)
            pid = int(p.pid)
            own, argv = self.known.get(pid, (False, ()))
            out.append(
                GpuProcess(
                    pid=pid,
                    gpu=i,
                    used_mib=round(used / (1 << 20)) if isinstance(used, int) else None,
                    name=os.path.basename(argv[0]) if argv else None,
                    own=own,
                    argv=argv[:16],
                )
            )
        return out


def meminfo(path: str = MEMINFO) -> dict[str, int]:
    out: dict[str, int] = {}
    try:
        with open(path, encoding="ascii", errors="replace") as fh:
            for line in fh:
                key, _, rest = line.partition(":")
                parts = rest.split()
                if parts and parts[0].isdigit():
                    out[key] = int(parts[0])
    except OSError:
        pass
    return out


def pressure(path: str = PRESSURE) -> tuple[float | None, float | None]:
    """(some avg10, full avg10) in %, or None where the kernel has no PSI."""
    found: dict[str, float] = {}
    try:
        with open(path, encoding="ascii", errors="replace") as fh:
            for line in fh:
                kind, *fields = line.split()
                for f in fields:
                    if f.startswith("avg10="):
                        found[kind] = float(f[6:])
    except (OSError, ValueError):
        pass
    return found.get("some"), found.get("full")


def descendants(pid: int) -> set[int]:
    """pid and every process below it, from /proc's parent links (one pass over /proc)."""
    children: dict[int, list[int]] = {}
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            with open(f"/proc/{entry}/stat", "rb") as fh:
                stat = fh.read()
        except OSError:
            continue
        # the command name may hold spaces and parentheses: the fields after the last ')' are fixed
        fields = stat[stat.rfind(b")") + 2 :].split()
        if len(fields) > 1:
            children.setdefault(int(fields[1]), []).append(int(entry))
    found, todo = {pid}, [pid]
    while todo:
        for child in children.get(todo.pop(), ()):
            if child not in found:
                found.add(child)
                todo.append(child)
    return found


def _argv(pid: int) -> tuple[str, ...]:
    try:
        with open(f"/proc/{pid}/cmdline", "rb") as fh:
            raw = fh.read(8192)
    except OSError:
        return ()
    return tuple(a.decode("utf-8", "replace") for a in raw.split(b"\0") if a)


def _watts(milliwatts: Any) -> float | None:
    return round(milliwatts / 1000.0, 1) if isinstance(milliwatts, (int, float)) else None

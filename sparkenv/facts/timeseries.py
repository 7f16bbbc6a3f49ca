"""The facts of Stage.WATCH: readings taken every few seconds while a workload runs (sparkenv/watch/),
as frozen records. One `Sample` is one line of the JSONL record, so a record read back after a hard
power-off is judged by the same rules as the live series.

Units are in the names: GPU values as NVML gives them (°C, W, MHz, MiB; its cumulative violation and
clock-event counters in seconds), memory in kB as /proc/meminfo writes it, PSI in percent.
"""

from __future__ import annotations

import dataclasses
import itertools
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any

KIB_PER_GIB = 1 << 20


@dataclass(frozen=True)
class GpuReading:
    index: int
    temperature_c: float | None = None
    power_w: float | None = None
    power_limit_w: float | None = None  # the enforced limit
    sm_clock_mhz: int | None = None
    sm_clock_max_mhz: int | None = None
    utilization: int | None = None  # %
    event_reasons: int | None = None  # clock event reasons bit mask (0x4: SW power cap …)
    # NVML's cumulative counters, seconds since the driver loaded (None where this GPU has none):
    power_violation_s: float | None = None  # nvmlDeviceGetViolationStatus(POWER)
    thermal_violation_s: float | None = None  # nvmlDeviceGetViolationStatus(THERMAL)
    sw_thermal_s: float | None = None  # clock event reason counters: SW thermal slowdown
    hw_thermal_s: float | None = None  # HW thermal slowdown
    hw_power_brake_s: float | None = None  # HW power brake
    shutdown_c: float | None = None  # NVML's shutdown threshold, where the GPU reports one
    memory_used_mib: int | None = None  # None on unified memory (GB10)


@dataclass(frozen=True)
class GpuProcess:
    pid: int
    gpu: int
    used_mib: int | None = None
    name: str | None = None
    own: bool = False  # the watched workload or one of its descendants
    argv: tuple[str, ...] = ()  # read where the PID is visible here, for naming inference servers


@dataclass(frozen=True)
class Sample:
    t: float  # seconds since the watch started
    wall: float  # Unix time
    gpus: tuple[GpuReading, ...] = ()
    apps: tuple[GpuProcess, ...] = ()
    mem_total_kb: int | None = None
    mem_available_kb: int | None = None
    mem_free_kb: int | None = None
    page_cache_kb: int | None = None  # Cached + Buffers
    psi_some_avg10: float | None = None  # /proc/pressure/memory, %
    psi_full_avg10: float | None = None

    def to_json(self) -> dict[str, Any]:
        """Compact: None values are left out (a reader fills them back)."""
        return _compact(dataclasses.asdict(self))

    @classmethod
    def from_json(cls, d: Mapping[str, Any]) -> Sample:
        """A record line back as a Sample; unknown keys (a newer writer) are ignored."""
        gpus = tuple(_known(GpuReading, g) for g in d.get("gpus") or ())
        apps = tuple(
            _known(GpuProcess, {**a, "argv": tuple(a.get("argv") or ())}) for a in d.get("apps") or ()
        )
        return _known(cls, {**d, "gpus": gpus, "apps": apps})


@dataclass(frozen=True)
class Series:
    """What the watch rules judge: the samples so far (oldest first) and what the platform says."""

    samples: tuple[Sample, ...]
    gb10: bool = False
    pids_local: bool = True  # NVML's PIDs are this namespace's: the workload's own processes are known

    @property
    def last(self) -> Sample | None:
        return self.samples[-1] if self.samples else None

    @property
    def duration(self) -> float:
        return self.samples[-1].t - self.samples[0].t if len(self.samples) > 1 else 0.0

    def window(self, seconds: float) -> Series:
        """The samples of the last `seconds`."""
        if not self.samples:
            return self
        start = self.samples[-1].t - seconds
        return dataclasses.replace(self, samples=tuple(s for s in self.samples if s.t >= start))

    def gpu_indexes(self) -> list[int]:
        return sorted({g.index for s in self.samples for g in s.gpus})

    def gpu(self, index: int, field: str) -> list[tuple[float, float]]:
        """(t, value) of one GPU field where it was read."""
        out = []
        for s in self.samples:
            for g in s.gpus:
                if g.index == index and isinstance(v := getattr(g, field), (int, float)):
                    out.append((s.t, float(v)))
        return out

    def memory(self, field: str) -> list[tuple[float, float]]:
        return [(s.t, float(v)) for s in self.samples if isinstance(v := getattr(s, field), (int, float))]


def trend(points: Iterable[tuple[float, float]]) -> float | None:
    """Least-squares slope (value per second) of (t, value) points; None under two distinct times."""
    pts = list(points)
    if len(pts) < 2:
        return None
    n = len(pts)
    mt = sum(t for t, _ in pts) / n
    mv = sum(v for _, v in pts) / n
    var = sum((t - mt) ** 2 for t, _ in pts)
    if var == 0:
        return None
    return sum((t - mt) * (v - mv) for t, v in pts) / var


def increase(points: list[tuple[float, float]]) -> float | None:
    """How much a cumulative counter rose over the points (a driver reload resets it: never negative)."""
    if len(points) < 2:
        return None
    rise = 0.0
    for (_, a), (_, b) in itertools.pairwise(points):
        rise += max(0.0, b - a)
    return rise


def clock(seconds: float) -> str:
    """+1:05, +1:02:03: time since start as the G-lines show it."""
    s = int(max(0.0, seconds))
    h, rest = divmod(s, 3600)
    m, sec = divmod(rest, 60)
    return f"+{h}:{m:02d}:{sec:02d}" if h else f"+{m}:{sec:02d}"


def _known(cls: type, d: Mapping[str, Any]) -> Any:
    names = {f.name for f in dataclasses.fields(cls)}
    return cls(**{k: v for k, v in d.items() if k in names})


def _compact(value: Any) -> Any:
    if isinstance(value, dict):
        return {k: _compact(v) for k, v in value.items() if v is not None and v != () and v != []}
    if isinstance(value, (list, tuple)):
        return [_compact(v) for v in value]
    return value

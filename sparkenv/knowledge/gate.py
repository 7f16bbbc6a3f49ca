"""data/gate.toml: the platform figures and thresholds of the gate's checks (G3–G7, G10)."""

from __future__ import annotations

import functools
from dataclasses import dataclass

from sparkenv import datafiles
from sparkenv.knowledge.schema import DistName, build


@dataclass(frozen=True)
class Gb10:
    capability: tuple[int, int]
    name_contains: str  # in the name nvidia-smi and torch report


@dataclass(frozen=True)
class Memory:
    page_cache_warn_fraction: float
    need_gb_default: float


@dataclass(frozen=True)
class Power:
    normal_sustained_w: float
    fault_cap_w: float
    plateau_range_w: float
    temperature_rise_c: float
    busy_utilization: int  # utilization.gpu (%) that counts as under load


@dataclass(frozen=True)
class Bandwidth:
    spec: float  # GB/s
    measured_low: float
    measured_high: float


@dataclass(frozen=True)
class ServerCaps:
    safe_fraction: float
    vllm_ceiling: float


@dataclass(frozen=True)
class Nvfp4:
    kernel_packages: tuple[DistName, ...]
    words: tuple[str, ...]
    good_targets: tuple[str, ...]


@dataclass(frozen=True)
class UnifiedMemory:
    other_processes_warn_fraction: float
    unaccounted_info_mib: int


@dataclass(frozen=True)
class Ray:
    source: str
    default_threshold: float
    signals_env: tuple[str, ...]
    workload_words: tuple[str, ...]


@dataclass(frozen=True)
class Gate:
    reviewed: str
    gb10: Gb10
    memory: Memory
    power: Power
    bandwidth: Bandwidth
    servers: ServerCaps
    nvfp4: Nvfp4
    unified_memory: UnifiedMemory
    ray: Ray


@functools.cache
def gate() -> Gate:
    return build(Gate, datafiles.load("gate"), "gate")

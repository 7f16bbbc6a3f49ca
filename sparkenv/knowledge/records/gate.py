"""data/gate.toml: the platform figures and thresholds of the gate's checks (G3–G7, G10)."""

from typing import Any, NamedTuple

from sparkenv.knowledge.schema import DistName, build


class Gb10(NamedTuple):
    capability: tuple[int, int]
    name_contains: str  # in the name nvidia-smi and torch report


class Memory(NamedTuple):
    page_cache_warn_fraction: float


class Power(NamedTuple):
    normal_sustained_w: float
    fault_cap_w: float
    plateau_range_w: float
    temperature_rise_c: float
    busy_utilization: int  # utilization.gpu (%) that counts as under load


class Bandwidth(NamedTuple):
    spec: float  # GB/s
    measured_low: float
    measured_high: float


class ServerCaps(NamedTuple):
    safe_fraction: float
    vllm_ceiling: float


class Nvfp4(NamedTuple):
    kernel_packages: tuple[DistName, ...]
    words: tuple[str, ...]
    good_targets: tuple[str, ...]


class UnifiedMemory(NamedTuple):
    other_processes_warn_fraction: float
    unaccounted_info_mib: int


class Ray(NamedTuple):
    source: str
    default_threshold: float
    signals_env: tuple[str, ...]
    workload_words: tuple[str, ...]


class Gate(NamedTuple):
    reviewed: str
    gb10: Gb10
    memory: Memory
    power: Power
    bandwidth: Bandwidth
    servers: ServerCaps
    nvfp4: Nvfp4
    unified_memory: UnifiedMemory
    ray: Ray


def parse(data: dict[str, Any]) -> Gate:
    """A parsed gate.toml as Gate, or one KnowledgeError naming the file and the key."""
    return build(Gate, data, "gate")

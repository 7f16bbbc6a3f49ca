"""data/watch.toml: thresholds of the judgements made over time beside a workload (G3, G4, G6)."""

from typing import Any, NamedTuple

from sparkenv.knowledge.schema import build


class Sampling(NamedTuple):
    interval_s: float
    fsync_s: float
    window_s: float


class PowerPinned(NamedTuple):
    pinned_fraction: float
    pinned_share: float
    temperature_rise_c: float
    min_window_s: float


class Throttle(NamedTuple):
    source: str
    thermal_warn_s: float
    gb10_clock_cap: str


class Stuck(NamedTuple):
    source: str
    busy_utilization: int
    clock_fraction: float
    power_fraction: float
    min_s: float


class Temperature(NamedTuple):
    source: str
    gb10_shutdown_c: float
    warn_margin_c: float
    fail_margin_c: float


class Memory(NamedTuple):
    eta_warn_s: float
    eta_fail_s: float
    min_trend_s: float
    trend_s: float
    min_fall_kb_s: int
    available_warn_fraction: float
    page_cache_fraction: float
    free_low_fraction: float


class Pressure(NamedTuple):
    source: str
    full_fail: float
    some_warn: float


class Processes(NamedTuple):
    growth_warn_mib: int


class Watch(NamedTuple):
    reviewed: str
    sampling: Sampling
    power: PowerPinned
    throttle: Throttle
    stuck: Stuck
    temperature: Temperature
    memory: Memory
    pressure: Pressure
    processes: Processes


def parse(data: dict[str, Any]) -> Watch:
    """A parsed watch.toml as Watch, or one KnowledgeError naming the file and the key."""
    return build(Watch, data, "watch")

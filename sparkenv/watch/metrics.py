"""The latest reading as a textfile for node-exporter's textfile collector (Prometheus text format, which
OpenMetrics parsers read too: `# EOF` closes it and is a comment to the Prometheus parser). Point the
collector's --collector.textfile.directory at the watch folder. Written whole or not at all."""

from __future__ import annotations

from sparkenv.core.report import Finding, Status
from sparkenv.facts.timeseries import Sample

NAME = "sparkenv_watch.prom"

GPU = (  # metric, help, field, scale to base units
    ("gpu_temperature_celsius", "GPU temperature", "temperature_c", 1.0),
    ("gpu_power_watts", "GPU power draw", "power_w", 1.0),
    ("gpu_power_limit_watts", "GPU enforced power limit", "power_limit_w", 1.0),
    ("gpu_sm_clock_hertz", "SM clock", "sm_clock_mhz", 1e6),
    ("gpu_utilization_ratio", "GPU utilization", "utilization", 0.01),
    (
        "gpu_power_violation_seconds",
        "time the power cap held clocks back, since the driver loaded",
        "power_violation_s",
        1.0,
    ),
    ("gpu_thermal_violation_seconds", "time heat held clocks back", "thermal_violation_s", 1.0),
    ("gpu_sw_thermal_slowdown_seconds", "SW thermal slowdown counter", "sw_thermal_s", 1.0),
    ("gpu_hw_thermal_slowdown_seconds", "HW thermal slowdown counter", "hw_thermal_s", 1.0),
    ("gpu_hw_power_brake_seconds", "HW power brake counter", "hw_power_brake_s", 1.0),
)
MEMORY = (
    ("memory_total_bytes", "MemTotal", "mem_total_kb", 1024.0),
    ("memory_available_bytes", "MemAvailable", "mem_available_kb", 1024.0),
    ("memory_page_cache_bytes", "Cached + Buffers", "page_cache_kb", 1024.0),
    ("memory_pressure_some_avg10_ratio", "PSI memory some avg10", "psi_some_avg10", 0.01),
    ("memory_pressure_full_avg10_ratio", "PSI memory full avg10", "psi_full_avg10", 0.01),
)


def render(s: Sample, findings: list[Finding], eta_s: float | None) -> str:
    out: list[str] = []

    def family(name: str, help_: str, kind: str, rows: list[tuple[str, float]]) -> None:
        if not rows:
            return
        full = f"sparkenv_watch_{name}"
        out.append(f"# HELP {full} {help_}.")
        out.append(f"# TYPE {full} {kind}")
        out.extend(f"{full}{labels} {_number(value)}" for labels, value in rows)

    for name, help_, attr, scale in GPU:
        rows = [(f'{{gpu="{g.index}"}}', v * scale) for g in s.gpus if (v := getattr(g, attr)) is not None]
        family(name, help_, "gauge", rows)
    for name, help_, attr, scale in MEMORY:
        v = getattr(s, attr)
        family(name, help_, "gauge", [("", v * scale)] if v is not None else [])
    family(
        "seconds_to_memory_exhaustion",
        "estimated at the current fall",
        "gauge",
        [("", eta_s)] if eta_s else [],
    )
    family("gpu_processes", "compute processes NVML lists", "gauge", [("", float(len(s.apps)))])
    family("elapsed_seconds", "time since the watch started", "gauge", [("", s.t)])
    counts: dict[tuple[str, str], int] = {}
    for f in findings:
        if f.status in (Status.WARN, Status.FAIL, Status.ERROR):
            key = (str(f.id), f.status.value)
            counts[key] = counts.get(key, 0) + 1
    family(
        "findings",
        "conditions now WARN or FAIL, by gotcha",
        "gauge",
        [(f'{{gotcha="{g}",status="{st}"}}', float(n)) for (g, st), n in sorted(counts.items())]
        or [('{gotcha="none",status="PASS"}', 0.0)],
    )
    return "\n".join(out) + "\n# EOF\n"


def _number(value: float) -> str:
    """Exact where it is whole (bytes, hertz), a short decimal otherwise."""
    return str(int(value)) if float(value).is_integer() else f"{value:.6g}"

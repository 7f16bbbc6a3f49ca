"""G4 live: temperature, power and throttle reasons; with --sample, a power plateau while heat climbs."""

from __future__ import annotations

from functools import partial
from typing import TYPE_CHECKING

from sparkenv.knowledge import gate
from sparkenv.report import Finding, GotchaId, Status
from sparkenv.rules import Rule, Stage

if TYPE_CHECKING:
    from sparkenv.facts.live import GateFacts
    from sparkenv.knowledge.records.gate import Power

_finding = partial(Finding, GotchaId.G4)  # every finding of this module is G4's

# nvidia-smi clocks_event_reasons bits that mean heat or power, not idleness or app clocks.
REASONS = {
    0x4: "SW power cap",
    0x8: "HW slowdown",
    0x20: "SW thermal slowdown",
    0x40: "HW thermal slowdown",
    0x80: "HW power brake",
}
COOL = "improve airflow and cooling, or shorten/checkpoint the run"


def live(f: GateFacts) -> list[Finding]:
    err = f.error_finding(GotchaId.G4, f.gpu_probe, "gpu0")
    if err:
        return [err]
    gpu = f.gpu0
    if gpu is None:
        readings = f.gpu_readings
        return [
            _finding(
                status=Status.SKIP,
                summary=f"no GPU reading: {readings.get('error', 'no GPU reported')}",
                subject="gpu0",
            )
        ]
    limits = gate().power
    temp, power, cap = gpu.get("temperature.gpu"), gpu.get("power.draw"), gpu.get("enforced.power.limit")
    reading = f"{_fmt(temp, '°C')}, {_fmt(power, ' W')} drawn, limit {_fmt(cap, ' W')}"
    evidence = [
        f"{k}: {v}"
        for k, v in gpu.items()
        if k
        in (
            "temperature.gpu",
            "power.draw",
            "power.limit",
            "enforced.power.limit",
            "utilization.gpu",
            "clocks_event_reasons.active",
        )
    ]
    findings = []
    active = _reasons(gpu.get("clocks_event_reasons.active"))
    if active:
        findings.append(f"throttling now: {', '.join(active)}")
    if f.is_gb10 and isinstance(cap, (int, float)) and cap < limits.fault_cap_w:
        findings.append(
            f"power limit {cap:g} W is far below the ~{limits.normal_sustained_w:g} W a GB10 sustains "
            "(power-controller fault?)"
        )
    samples = f.gpu_readings.get("samples") or []
    if samples:
        findings += _window(samples, limits, f.is_gb10)
        evidence.append(f"{len(samples)} samples over {samples[-1]['t'] - samples[0]['t']:.1f} s")
    if findings:
        return [
            _finding(
                status=Status.WARN,
                summary=f"{reading}; {'; '.join(findings)}",
                subject="gpu0",
                evidence=tuple(evidence),
                fix=COOL + "; a GB10 stuck near 30 W needs an RMA",
            )
        ]
    note = "" if samples else " (one reading; --sample SECONDS watches for a plateau)"
    return [
        _finding(
            status=Status.INFO,
            summary=reading + note,
            subject="gpu0",
            evidence=tuple(evidence),
        )
    ]


def _window(samples: list[dict], limits: Power, gb10: bool) -> list[str]:
    powers = [s["power.draw"] for s in samples if isinstance(s.get("power.draw"), (int, float))]
    temps = [s["temperature.gpu"] for s in samples if isinstance(s.get("temperature.gpu"), (int, float))]
    utils = [s["utilization.gpu"] for s in samples if isinstance(s.get("utilization.gpu"), (int, float))]
    out = []
    if len(powers) >= 3 and len(temps) >= 3:
        flat = max(powers) - min(powers) <= limits.plateau_range_w
        rising = temps[-1] - temps[0] >= limits.temperature_rise_c
        if flat and rising:
            out.append(
                f"power flat at ~{sum(powers) / len(powers):.0f} W while temperature rose "
                f"{temps[0]}→{temps[-1]} °C: thermal throttling"
            )
    busy = [u for u in utils if u >= limits.busy_utilization]
    if gb10 and powers and busy and len(busy) >= len(utils) / 2 and max(powers) < limits.fault_cap_w:
        out.append(
            f"under load the draw never passed {max(powers):.0f} W (a healthy GB10 reaches "
            f"~{limits.normal_sustained_w:g} W): power-controller fault?"
        )
    return out


def _reasons(value: object) -> list[str]:
    if not isinstance(value, str) or not value.startswith("0x"):
        return []
    try:
        bits = int(value, 16)
    except ValueError:
        return []
    return [name for bit, name in REASONS.items() if bits & bit]


def _fmt(value: object, unit: str) -> str:
    return f"{value:g}{unit}" if isinstance(value, (int, float)) else "n/a"


RULES = (
    Rule(
        Stage.LIVE,
        live,
        "GPU temperature, power draw and limit, clocks and throttle reasons from NVML; with --sample, "
        "a power plateau while the temperature climbs",
    ),
)

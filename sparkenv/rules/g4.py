"""G4 live: temperature, power and throttle reasons; with --sample, a power plateau while heat climbs.
G4 watch: the same over a whole run — power pinned at the cap while the temperature climbs, thermal
slowdown counters rising, clocks that do not follow the load (the stuck low-power state), and the
temperature approaching the shutdown point."""

from __future__ import annotations

import dataclasses
from functools import partial
from typing import TYPE_CHECKING, Any

from sparkenv.core.report import Finding, GotchaId, Status
from sparkenv.knowledge import gate
from sparkenv.knowledge import watch as limits
from sparkenv.rules import Lazy, Rule, Stage

if TYPE_CHECKING:
    from sparkenv.facts.live import GateFacts
    from sparkenv.facts.timeseries import Series
    from sparkenv.knowledge.records.gate import Power
    from sparkenv.knowledge.records.watch import Watch

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
    evidence = [f"{k}: {v}" for k, v in gpu.items() if k in _EVIDENCE]
    findings = _now(gpu, limits, f.is_gb10)
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


_EVIDENCE = (
    "temperature.gpu",
    "power.draw",
    "power.limit",
    "enforced.power.limit",
    "utilization.gpu",
    "clocks_event_reasons.active",
)


def _now(gpu: dict[str, Any], limits: Power, gb10: bool) -> list[str]:
    """What one reading says: throttling now, or a GB10's power limit far below what it sustains."""
    found = []
    active = _reasons(gpu.get("clocks_event_reasons.active"))
    if active:
        found.append(f"throttling now: {', '.join(active)}")
    cap = gpu.get("enforced.power.limit")
    if gb10 and isinstance(cap, (int, float)) and cap < limits.fault_cap_w:
        found.append(
            f"power limit {cap:g} W is far below the ~{limits.normal_sustained_w:g} W a GB10 sustains "
            "(power-controller fault?)"
        )
    return found


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


# --- Stage.WATCH: readings over a run (sparkenv gate --watch, sparkenv watch) -------------------------

HEAT = 0x8 | 0x20 | 0x40 | 0x80  # the REASONS that are heat or a power brake, not the power cap


def watch(s: Series) -> list[Finding]:

    w = limits()
    recent = s.window(w.sampling.window_s)
    out: list[Finding] = []
    for i in s.gpu_indexes():
        out += [_pinned(recent, i, w), _slowdown(s, i, w), _stuck(recent, i, w), _heat(s, i, w)]
    if not out:
        out.append(
            Finding(
                id=GotchaId.G4, status=Status.SKIP, summary="no GPU readings in the record", subject="gpu"
            )
        )
    return out


def _g4(status: Status, summary: str, subject: str, fix: str | None = None, *ev: str) -> Finding:
    """The watch rules' findings, fix before evidence (most have a fix, few evidence)."""
    return _finding(status=status, summary=summary, subject=subject, evidence=ev, fix=fix)


def _pinned(s: Series, i: int, w: Watch) -> Finding:
    subject, p = f"gpu{i} power", w.power
    draws = s.gpu(i, "power_w")
    limits = dict(s.gpu(i, "power_limit_w"))
    temps = s.gpu(i, "temperature_c")
    if len(draws) < 3 or not limits or s.duration < p.min_window_s:
        return _g4(Status.PASS, f"power: too few readings yet ({len(draws)})", subject)
    at_cap = [(t, d) for t, d in draws if t in limits and d >= p.pinned_fraction * limits[t]]
    share = len(at_cap) / len(draws)
    cap = max(limits.values())
    span = f"{min(d for _, d in draws):.0f}–{max(d for _, d in draws):.0f} W"
    # the climb while at the cap: the hottest pinned reading against the window's first
    capped_t = {t for t, _ in at_cap}
    hot = max((v for t, v in temps if t in capped_t), default=None)
    rise = hot - temps[0][1] if hot is not None and temps else 0.0
    if share < p.pinned_share:
        return _g4(Status.PASS, f"power {span}, below the {cap:g} W cap most of the time", subject)
    pinned = f"power pinned at the {cap:g} W cap ({span}, {share:.0%} of the last {s.duration:.0f} s)"
    if rise >= p.temperature_rise_c:
        return _g4(
            Status.WARN,
            f"{pinned} while the temperature climbed {temps[0][1]:g}→{hot:g} °C: running at its power "
            "limit and heating",
            subject,
            f"{COOL}; a GB10 that hard-powered-off under such load stayed up with its SM clocks capped: "
            f"{w.throttle.gb10_clock_cap}",
        )
    return _g4(Status.INFO, f"{pinned}, temperature steady: power-limited, as full load is", subject)


def _slowdown(s: Series, i: int, w: Watch) -> Finding:
    from sparkenv.facts.timeseries import increase

    subject = f"gpu{i} slowdown"
    counters = {
        "SW thermal slowdown": "sw_thermal_s",
        "HW thermal slowdown": "hw_thermal_s",
        "HW power brake": "hw_power_brake_s",
        "thermal violation": "thermal_violation_s",
    }
    rose = {name: increase(s.gpu(i, field)) for name, field in counters.items()}
    seen = {name: v for name, v in rose.items() if v is not None}
    power = increase(s.gpu(i, "power_violation_s"))
    capped = f"; the power cap held clocks back {power:.1f} s of {s.duration:.0f} s" if power else ""
    if not seen:
        return _g4(Status.SKIP, f"this GPU reports no slowdown counters{capped}", subject)
    worst = max(seen, key=lambda k: seen[k])
    if seen[worst] >= w.throttle.thermal_warn_s:
        detail = ", ".join(f"{k} +{v:.1f} s" for k, v in seen.items() if v)
        return _g4(
            Status.WARN,
            f"thermal slowdown accumulating: {detail} over {s.duration:.0f} s{capped}",
            subject,
            f"{COOL}; on a GB10 cap the SM clocks ({w.throttle.gb10_clock_cap}): a box that later "
            "powered off hard had accumulated 27.6 s",
            w.throttle.source,
        )
    return _g4(Status.PASS, f"no thermal slowdown over {s.duration:.0f} s{capped}", subject)


def _stuck(s: Series, i: int, w: Watch) -> Finding:
    subject, st = f"gpu{i} clocks", w.stuck
    tail = s.window(st.min_s)
    # A GB10 may report no enforced limit: its sustained draw (data/gate.toml) stands in.
    fallback = gate().power.normal_sustained_w if s.gb10 else None
    rows = []
    for smp in tail.samples:
        g = next((g for g in smp.gpus if g.index == i), None)
        if g is not None and g.power_limit_w is None:
            g = dataclasses.replace(g, power_limit_w=fallback)
        if g is None or None in (
            g.utilization,
            g.sm_clock_mhz,
            g.sm_clock_max_mhz,
            g.power_w,
            g.power_limit_w,
        ):
            return _g4(Status.PASS, "clocks: not every value is read on this GPU", subject)
        rows.append(g)
    busy = [g for g in rows if g.utilization >= st.busy_utilization]  # type: ignore[operator]
    if not busy:
        return _g4(Status.PASS, "clocks: not under load", subject)
    stuck = [
        g
        for g in busy
        if g.sm_clock_mhz <= st.clock_fraction * g.sm_clock_max_mhz  # type: ignore[operator]
        and g.power_w <= st.power_fraction * g.power_limit_w  # type: ignore[operator]
        and not (g.event_reasons or 0) & HEAT
    ]
    if len(stuck) == len(rows) and tail.duration >= 0.9 * st.min_s:
        g = stuck[-1]
        return _g4(
            Status.WARN,
            f"busy ({g.utilization}%) for {tail.duration:.0f} s at {g.sm_clock_mhz} of "
            f"{g.sm_clock_max_mhz} MHz and {g.power_w:g} of {g.power_limit_w:g} W with no heat or power "
            "reason: the stuck low-power state",
            subject,
            "save and stop the run; in the field report only removing power (not a reboot) cleared it",
            st.source,
        )
    clocks = [g.sm_clock_mhz for g in busy]
    return _g4(Status.PASS, f"clocks follow the load ({min(clocks)}–{max(clocks)} MHz busy)", subject)  # type: ignore[type-var]


def _heat(s: Series, i: int, w: Watch) -> Finding:
    subject, tp = f"gpu{i} temperature", w.temperature
    temps = s.gpu(i, "temperature_c")
    if not temps:
        return _g4(Status.SKIP, "no temperature reading", subject)
    reported = s.gpu(i, "shutdown_c")
    shutdown = reported[-1][1] if reported else (tp.gb10_shutdown_c if s.gb10 else None)
    now, peak = temps[-1][1], max(v for _, v in temps)
    if shutdown is None:
        return _g4(Status.PASS, f"{now:g} °C now, peak {peak:g} °C (no shutdown point known)", subject)
    where = "NVML's" if reported else "a GB10's reported"
    margin = shutdown - now
    text = f"{now:g} °C, {margin:.1f} °C below {where} {shutdown:g} °C shutdown point (peak {peak:g} °C)"
    if margin <= tp.fail_margin_c:
        return _g4(Status.FAIL, text, subject, f"stop or checkpoint now; {COOL}", tp.source)
    if margin <= tp.warn_margin_c:
        return _g4(
            Status.WARN, text, subject, f"{COOL}; spinning CPU cores heat a GB10's shared package", tp.source
        )
    return _g4(Status.PASS, text, subject)


RULES = (
    Rule(
        Stage.HOST,
        Lazy("host_system", "g4"),
        "every core's cpufreq governor and range in /sys, and the fastest core's frequency while one busy"
        " loop is pinned to it for a second",
    ),
    Rule(
        Stage.LIVE,
        live,
        "GPU temperature, power draw and limit, clocks and throttle reasons from NVML; with --sample, "
        "a power plateau while the temperature climbs",
    ),
    Rule(
        Stage.WATCH,
        watch,
        "NVML every few seconds over the run: draw against the enforced limit with the temperature, the "
        "cumulative thermal-slowdown and power-brake counters, SM clock and utilization (the stuck "
        "low-power state), the temperature against the shutdown point (data/watch.toml)",
    ),
)

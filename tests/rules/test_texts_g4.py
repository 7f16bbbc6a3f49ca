"""rules/g4.py (G4): the words each verdict gives and the edges where it changes — the reading as the gate
shows it, each throttle reason nvidia-smi's bits name, a GB10's power limit at the fault line, a plateau
over --sample's readings, and over a watched run: power at the cap, the slowdown counters, the stuck
low-power state, the margin to the shutdown point. Live rows start from the H200 snapshot recorded on a
real machine (tests/fixtures/facts) and the GB10's public reports; watch rows from tests/rules/stage_facts
series (NVML values we cannot cause here: no GPU on this machine). Figures come from data/gate.toml and
data/watch.toml."""

from __future__ import annotations

import stage_facts as sf

from sparkenv.core.report import GotchaId, Status
from sparkenv.knowledge import gate
from sparkenv.knowledge import watch as watch_data
from sparkenv.rules import g4

COOL = "improve airflow and cooling, or shorten/checkpoint the run"
LIVE_FIX = COOL + "; a GB10 stuck near 30 W needs an RMA"
POWER = gate().power
W = watch_data()


def one(found, subject="gpu0"):
    mine = [f for f in found if f.subject == subject]
    assert len(mine) == 1 and mine[0].id is GotchaId.G4, found
    return mine[0]


def h200(**reading):
    f = sf.live_raw("h200-static")
    f.raw["gpu"]["gpus"][0].update(reading)
    return f


def gb10(**reading):
    f = sf.live_raw("gb10")
    f.raw["smi"]["gpus"][0].update(reading)
    return f


# --- Stage.LIVE --------------------------------------------------------------------------------------------


def test_calm_reading_is_an_info_with_the_readings_as_evidence():
    f = one(g4.live(sf.live_raw("h200-static")))
    assert (f.status, f.fix) == (Status.INFO, None)
    assert (
        f.summary == "33°C, 94.05 W drawn, limit 700 W (one reading; --sample SECONDS watches for a plateau)"
    )
    assert f.evidence == (
        "temperature.gpu: 33",
        "power.draw: 94.05",
        "power.limit: 700.0",
        "enforced.power.limit: 700.0",
        "utilization.gpu: 0",
        "clocks_event_reasons.active: 0x0000000000000001",
    )


def test_values_not_read_are_said_so():
    f = one(g4.live(gb10()))
    assert f.summary.startswith("35°C, 11.17 W drawn, limit n/a")
    bare = one(g4.live(gb10(**{"temperature.gpu": None, "power.draw": "[N/A]"})))
    assert bare.summary.startswith("n/a, n/a drawn, limit n/a")


def test_every_heat_and_power_reason_is_named():
    f = one(g4.live(h200(**{"clocks_event_reasons.active": "0x00000000000000EC"})))
    assert f.status is Status.WARN and f.fix == LIVE_FIX
    assert f.summary == (
        "33°C, 94.05 W drawn, limit 700 W; throttling now: SW power cap, HW slowdown, SW thermal slowdown, "
        "HW thermal slowdown, HW power brake"
    )
    # idle (0x1) and application clocks (0x2, 0x10) are no throttling; a value not in hex is not read
    for value in ("0x0000000000000013", "0xZZ", "64", None, 64):
        assert one(g4.live(h200(**{"clocks_event_reasons.active": value}))).status is Status.INFO, value


def test_gb10_power_limit_at_the_fault_line():
    low = one(g4.live(gb10(**{"enforced.power.limit": POWER.fault_cap_w - 0.5})))
    assert low.status is Status.WARN and low.fix == LIVE_FIX
    assert low.summary.endswith(
        f"; power limit {POWER.fault_cap_w - 0.5:g} W is far below the ~{POWER.normal_sustained_w:g} W a "
        "GB10 sustains (power-controller fault?)"
    )
    assert one(g4.live(gb10(**{"enforced.power.limit": POWER.fault_cap_w}))).status is Status.INFO
    assert one(g4.live(gb10(**{"enforced.power.limit": "30"}))).status is Status.INFO  # not a number read
    assert one(g4.live(h200(**{"enforced.power.limit": 30.0}))).status is Status.INFO  # not a GB10


def _samples(power, temps, util=None):
    return [
        {
            "t": 0.5 * i,
            "power.draw": p,
            "temperature.gpu": t,
            **({"utilization.gpu": util[i]} if util else {}),
        }
        for i, (p, t) in enumerate(zip(power, temps, strict=True))
    ]


def _sampled(f, samples):
    f.raw["gpu" if "gpu" in f.raw else "smi"]["samples"] = samples
    return one(g4.live(f))


def test_plateau_while_heating_over_the_samples():
    f = _sampled(h200(), _samples([95, 95.5, 96, 100], [60, 61, 62, 60 + POWER.temperature_rise_c]))
    assert f.status is Status.WARN and f.fix == LIVE_FIX
    assert f.summary == (
        "33°C, 94.05 W drawn, limit 700 W; power flat at ~97 W while temperature rose 60→63.0 °C: thermal "
        "throttling"
    )
    assert f.evidence[-1] == "4 samples over 1.5 s"
    # the edges: power moving more than the plateau band, heat rising less, too few readings
    spread = [95, 95, 95, 95 + POWER.plateau_range_w + 0.1]
    assert _sampled(h200(), _samples(spread, [60, 61, 62, 70])).status is Status.INFO
    assert _sampled(h200(), _samples([95] * 4, [60, 61, 62, 62.9])).status is Status.INFO
    assert _sampled(h200(), _samples([95] * 2, [60, 70])).status is Status.INFO
    three = _sampled(h200(), _samples([95] * 3, [60, 61, 60 + POWER.temperature_rise_c]))
    assert three.status is Status.WARN and three.summary.endswith("thermal throttling")  # three suffice
    calm = _sampled(h200(), _samples([95] * 3, [60, 60, 60]))
    assert calm.summary == "33°C, 94.05 W drawn, limit 700 W" and calm.evidence[-1] == "3 samples over 1.0 s"


def test_gb10_under_load_that_never_draws_its_power():
    busy = POWER.busy_utilization
    f = _sampled(gb10(), _samples([20, 30, 25, 30], [50, 50, 51, 50], [busy, busy, 0, 0]))
    assert f.status is Status.WARN
    assert f.summary.endswith(
        f"; under load the draw never passed 30 W (a healthy GB10 reaches ~{POWER.normal_sustained_w:g} W): "
        "power-controller fault?"
    )
    mostly_idle = _samples([20, 30, 25, 30], [50, 50, 51, 50], [busy, busy - 1, 0, 0])
    assert _sampled(gb10(), mostly_idle).status is Status.INFO
    strong = _samples([20, 30, 25, POWER.fault_cap_w], [50, 50, 51, 50], [busy] * 4)
    assert _sampled(gb10(), strong).status is Status.INFO
    assert _sampled(h200(), _samples([20, 30, 25, 30], [50, 50, 51, 50], [busy] * 4)).status is Status.INFO


def test_no_gpu_and_a_failed_probe():
    none = one(g4.live(sf.live_raw("h200-static", gpu={"available": False, "gpus": [], "error": "NVML: no"})))
    assert (none.status, none.summary) == (Status.SKIP, "no GPU reading: NVML: no")
    quiet = one(g4.live(sf.live_raw("h200-static", gpu={"available": False, "gpus": []})))
    assert quiet.summary == "no GPU reading: no GPU reported"
    failed = sf.live_raw("h200-static", probe_errors={"gpu": "NVML init failed"})
    assert one(g4.live(failed)).status is Status.ERROR


# --- Stage.WATCH -------------------------------------------------------------------------------------------


def _pinned(temps_from: float, temps_to: float, n: int = 30, **more):
    return sf.series(
        n,
        gpu=lambda i: {
            "power_w": 690.0 + i % 3 * 2,
            "temperature_c": temps_from + (temps_to - temps_from) * i / max(n - 1, 1),
            **more,
        },
    )


def test_power_pinned_at_the_cap_while_heating():
    f = one(g4.watch(_pinned(40, 62)), "gpu0 power")
    assert f.status is Status.WARN
    assert f.summary == (
        "power pinned at the 700 W cap (690–694 W, 100% of the last 58 s) while the temperature climbed "
        "40→62 °C: running at its power limit and heating"
    )
    assert f.fix == (
        f"{COOL}; a GB10 that hard-powered-off under such load stayed up with its SM clocks capped: "
        f"{W.throttle.gb10_clock_cap}"
    )
    steady = one(g4.watch(_pinned(60, 60 + W.power.temperature_rise_c - 0.1)), "gpu0 power")
    assert steady.status is Status.INFO and steady.fix is None
    assert steady.summary == (
        "power pinned at the 700 W cap (690–694 W, 100% of the last 58 s), temperature steady: "
        "power-limited, as full load is"
    )
    assert one(g4.watch(_pinned(60, 60 + W.power.temperature_rise_c)), "gpu0 power").status is Status.WARN


def test_power_below_the_cap_and_too_few_readings():
    below = one(g4.watch(sf.series(30, gpu=lambda i: {"power_w": 600.0 + i})), "gpu0 power")
    assert (below.status, below.summary) == (
        Status.PASS,
        "power 600–629 W, below the 700 W cap most of the time",
    )
    few = one(g4.watch(sf.series(2)), "gpu0 power")
    assert (few.status, few.summary) == (Status.PASS, "power: too few readings yet (2)")
    short = one(g4.watch(sf.series(5, every=W.power.min_window_s / 5)), "gpu0 power")
    assert short.summary == "power: too few readings yet (5)"
    # at the cap in 80 % of the readings counts; one reading fewer does not
    share = sf.series(
        10, every=3.0, gpu=lambda i: {"power_w": 700.0 if i < 8 else 300.0, "temperature_c": 40 + 3 * i}
    )
    assert one(g4.watch(share), "gpu0 power").status is Status.WARN
    less = sf.series(
        10, every=3.0, gpu=lambda i: {"power_w": 700.0 if i < 7 else 300.0, "temperature_c": 40 + 3 * i}
    )
    assert one(g4.watch(less), "gpu0 power").status is Status.PASS


def test_thermal_slowdown_accumulating_names_each_counter():
    s = sf.series(
        30,
        gpu=lambda i: {
            "sw_thermal_s": 100.0 + 0.4 * i,
            "hw_power_brake_s": 2.0 + 0.1 * i,
            "power_violation_s": 10.0 + i,
        },
    )
    f = one(g4.watch(s), "gpu0 slowdown")
    assert f.status is Status.WARN
    assert f.summary == (
        "thermal slowdown accumulating: SW thermal slowdown +11.6 s, HW power brake +2.9 s over 58 s; the "
        "power cap held clocks back 29.0 s of 58 s"
    )
    assert f.fix == (
        f"{COOL}; on a GB10 cap the SM clocks ({W.throttle.gb10_clock_cap}): a box that later powered off "
        "hard had accumulated 27.6 s"
    )
    assert f.evidence == (W.throttle.source,)
    under = sf.series(30, gpu=lambda i: {"hw_thermal_s": i * (W.throttle.thermal_warn_s - 0.1) / 29})
    calm = one(g4.watch(under), "gpu0 slowdown")
    assert (calm.status, calm.summary) == (Status.PASS, "no thermal slowdown over 58 s")
    at = sf.series(30, gpu=lambda i: {"thermal_violation_s": i * W.throttle.thermal_warn_s / 29})
    violation = one(g4.watch(at), "gpu0 slowdown")
    assert (violation.status, violation.summary) == (
        Status.WARN,
        f"thermal slowdown accumulating: thermal violation +{W.throttle.thermal_warn_s:.1f} s over 58 s",
    )
    bare = sf.series(
        5, rest={"temperature_c": 50, "power_violation_s": 0.0}, gpu=lambda i: {"power_violation_s": i}
    )
    assert one(g4.watch(bare), "gpu0 slowdown").summary == (
        "this GPU reports no slowdown counters; the power cap held clocks back 4.0 s of 8 s"
    )


def _gb10_busy(n=40, **gpu):
    rest = {**sf.H200_REST, "power_limit_w": None, "shutdown_c": None, "sm_clock_max_mhz": 3003}
    return sf.series(n, rest=rest, gb10=True, gpu=lambda i: {"utilization": 97, **gpu})


def test_stuck_low_power_state():
    f = one(g4.watch(_gb10_busy(sm_clock_mhz=850, power_w=28.0)), "gpu0 clocks")
    assert f.status is Status.WARN
    assert f.summary == (
        f"busy (97%) for 60 s at 850 of 3003 MHz and 28 of {gate().power.normal_sustained_w:g} W with no "
        "heat or power reason: the stuck low-power state"
    )
    assert f.fix == "save and stop the run; in the field report only removing power (not a reboot) cleared it"
    assert f.evidence == (W.stuck.source,)
    # a heat reason explains the low clock; a clock or draw above half its maximum is no stuck state
    assert one(
        g4.watch(_gb10_busy(sm_clock_mhz=850, power_w=28.0, event_reasons=0x20)), "gpu0 clocks"
    ).status is (Status.PASS)
    assert one(g4.watch(_gb10_busy(sm_clock_mhz=1502, power_w=28.0)), "gpu0 clocks").status is Status.PASS
    assert one(g4.watch(_gb10_busy(sm_clock_mhz=1501, power_w=50.0)), "gpu0 clocks").status is Status.WARN
    assert one(g4.watch(_gb10_busy(sm_clock_mhz=850, power_w=50.5)), "gpu0 clocks").status is Status.PASS
    # too short a stretch to call it
    assert (
        one(g4.watch(_gb10_busy(n=20, sm_clock_mhz=850, power_w=28.0)), "gpu0 clocks").status is Status.PASS
    )


def test_stuck_state_quotes_the_latest_reading():
    rest = {**sf.H200_REST, "power_limit_w": None, "shutdown_c": None, "sm_clock_max_mhz": 3003}
    drifting = sf.series(
        40, rest=rest, gb10=True, gpu=lambda i: {"utilization": 97, "sm_clock_mhz": 800 + i, "power_w": 28.0}
    )
    f = one(g4.watch(drifting), "gpu0 clocks")
    assert f.status is Status.WARN and f.summary.startswith("busy (97%) for 60 s at 839 of 3003 MHz")


def test_clocks_texts():
    idle = one(g4.watch(_gb10_busy(utilization=W.stuck.busy_utilization - 1)), "gpu0 clocks")
    assert (idle.status, idle.summary) == (Status.PASS, "clocks: not under load")
    follow = one(g4.watch(_gb10_busy(sm_clock_mhz=2400, power_w=95.0)), "gpu0 clocks")
    assert follow.summary == "clocks follow the load (2400–2400 MHz busy)"
    unread = one(g4.watch(_gb10_busy(sm_clock_mhz=None)), "gpu0 clocks")
    assert unread.summary == "clocks: not every value is read on this GPU"
    not_gb10 = sf.series(40, rest={**sf.H200_REST, "power_limit_w": None}, gpu=lambda i: {"utilization": 97})
    assert one(g4.watch(not_gb10), "gpu0 clocks").summary == "clocks: not every value is read on this GPU"


def test_temperature_against_the_shutdown_point():
    tp = W.temperature
    warn = one(g4.watch(_gb10_busy(temperature_c=tp.gb10_shutdown_c - tp.warn_margin_c)), "gpu0 temperature")
    assert warn.status is Status.WARN
    assert warn.summary == "94.8 °C, 10.0 °C below a GB10's reported 104.8 °C shutdown point (peak 94.8 °C)"
    assert warn.fix == f"{COOL}; spinning CPU cores heat a GB10's shared package"
    assert warn.evidence == (tp.source,)
    fail = one(g4.watch(_gb10_busy(temperature_c=tp.gb10_shutdown_c - tp.fail_margin_c)), "gpu0 temperature")
    assert fail.status is Status.FAIL and fail.fix == f"stop or checkpoint now; {COOL}"
    assert fail.evidence == (tp.source,)
    ok = one(
        g4.watch(_gb10_busy(temperature_c=tp.gb10_shutdown_c - tp.warn_margin_c - 0.1)), "gpu0 temperature"
    )
    assert ok.status is Status.PASS and ok.fix is None
    nvml = one(g4.watch(sf.series(5, gpu=lambda i: {"temperature_c": 50 + i})), "gpu0 temperature")
    assert nvml.summary == "54 °C, 41.0 °C below NVML's 95 °C shutdown point (peak 54 °C)"
    unknown = sf.series(5, rest={**sf.H200_REST, "shutdown_c": None}, gpu=lambda i: {"temperature_c": 60 - i})
    assert (
        one(g4.watch(unknown), "gpu0 temperature").summary
        == "56 °C now, peak 60 °C (no shutdown point known)"
    )
    first = one(g4.watch(sf.series(1, gpu=lambda i: {"temperature_c": 60})), "gpu0 temperature")
    assert first.summary == "60 °C, 35.0 °C below NVML's 95 °C shutdown point (peak 60 °C)"  # one reading
    none = sf.series(5, rest={**sf.H200_REST, "temperature_c": None})
    assert one(g4.watch(none), "gpu0 temperature").summary == "no temperature reading"


def test_no_gpu_in_the_record():
    assert [(f.status, f.subject, f.summary) for f in g4.watch(sf.series(5, rest={}))] == [
        (Status.SKIP, "gpu", "no GPU readings in the record")
    ]


def test_more_from_the_full_mutant_run():
    """The hardware thermal counter named; the lines with no verdict to give keep their status; two live
    findings joined into one summary."""
    hw = sf.series(30, gpu=lambda i: {"hw_thermal_s": i * W.throttle.thermal_warn_s / 29})
    assert one(g4.watch(hw), "gpu0 slowdown").summary == (
        f"thermal slowdown accumulating: HW thermal slowdown +{W.throttle.thermal_warn_s:.1f} s over 58 s"
    )
    none = sf.series(5, rest={**sf.H200_REST, "temperature_c": None})
    assert one(g4.watch(none), "gpu0 temperature").status is Status.SKIP
    unknown = sf.series(5, rest={**sf.H200_REST, "shutdown_c": None}, gpu=lambda i: {"temperature_c": 60})
    assert one(g4.watch(unknown), "gpu0 temperature").status is Status.PASS
    unread = one(g4.watch(_gb10_busy(sm_clock_mhz=None)), "gpu0 clocks")
    assert unread.status is Status.PASS
    both = gb10(**{"enforced.power.limit": POWER.fault_cap_w - 0.5, "clocks_event_reasons.active": "0x20"})
    assert one(g4.live(both)).summary == (
        f"35°C, 11.17 W drawn, limit {POWER.fault_cap_w - 0.5:g} W; throttling now: SW thermal slowdown; "
        f"power limit {POWER.fault_cap_w - 0.5:g} W is far below the ~{POWER.normal_sustained_w:g} W a GB10 "
        "sustains (power-controller fault?)"
    )

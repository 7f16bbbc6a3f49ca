"""rules/g4.py (live only): thermal and power throttling from NVML. Its best is INFO: a reading."""

from __future__ import annotations

import pytest
import stage_facts as sf
from rule_table import Row, check, ids

from sparkenv.core.report import Status

COOL = "improve airflow and cooling"


def _gb10(**gpu):
    f = sf.live_raw("gb10")
    f.raw["smi"]["gpus"][0].update(gpu)
    return f


def _samples(power, temps):
    return [
        {"t": i, "power.draw": p, "temperature.gpu": t}
        for i, (p, t) in enumerate(zip(power, temps, strict=True))
    ]


ROWS = [
    Row(
        "g4.live",
        "one calm reading",
        lambda c: sf.live_raw("h200-static"),
        "gpu0",
        Status.INFO,
        None,
        "33°C, 94.05 W drawn, limit 700 W",
    ),
    Row(
        "g4.live",
        "throttling now",
        lambda c: sf.live_raw(
            "h200-static",
            gpu__gpus=[
                {**sf.live_raw("h200-static").gpu0, "clocks_event_reasons.active": "0x0000000000000040"}
            ],
        ),
        "gpu0",
        Status.WARN,
        COOL,
        "throttling now: HW thermal slowdown",
    ),
    Row(
        "g4.live",
        "GB10 capped near 30 W",
        lambda c: _gb10(**{"enforced.power.limit": 30.0}),
        "gpu0",
        Status.WARN,
        "needs an RMA",
        "power-controller fault",
    ),
    Row(
        "g4.live",
        "power plateau while the temperature climbs",
        lambda c: sf.live_raw("h200-static", gpu__samples=_samples([95, 95.5, 96, 95.8], [60, 63, 66, 70])),
        "gpu0",
        Status.WARN,
        COOL,
        "thermal throttling",
    ),
    Row(
        "g4.live",
        "no GPU",
        lambda c: sf.live_raw(
            "h200-static", gpu={"available": False, "gpus": [], "error": "NVML: driver not loaded"}
        ),
        "gpu0",
        Status.SKIP,
    ),
]


# --- Stage.WATCH ----------------------------------------------------------------------------------------
# NVML fakes, because they cannot be caused here (no GPU on this machine, no GB10 anywhere we run):
# the throttle counters, the GB10's readings (its stuck low-power state, its shutdown point), an H200 held
# at its cap. The replayed rows read the record the watcher wrote on a real H200 under a bf16 matmul loop.
H200 = "h200-matmul-cotenant.jsonl"


def _pinned(temps_from: float, temps_to: float):
    return sf.series(
        30,
        gpu=lambda i: {
            "power_w": 690.0 + i % 3 * 2,
            "utilization": 100,
            "sm_clock_mhz": 1470,
            "event_reasons": 4,
            "temperature_c": temps_from + (temps_to - temps_from) * i / 29,
        },
    )


def _gb10_busy(**gpu):
    """A GB10 under load as field reports describe it; NVML reports no enforced limit and no shutdown
    threshold on it (figures of shape, not a recording)."""
    rest = {**sf.H200_REST, "power_limit_w": None, "shutdown_c": None, "sm_clock_max_mhz": 3003}
    return sf.series(40, rest=rest, gb10=True, gpu=lambda i: {"utilization": 97, **gpu})


ROWS += [
    Row("g4.watch", "replayed H200: pinned at 700 W while heating", lambda c: sf.recorded(H200),
        "gpu0 power", Status.WARN, "nvidia-smi -lgc 0,2100", "climbed 42→61 °C"),
    Row("g4.watch", "pinned at the cap, temperature climbing", lambda c: _pinned(40, 62), "gpu0 power",
        Status.WARN, COOL, "power pinned at the 700 W cap"),
    Row("g4.watch", "pinned at the cap, temperature steady", lambda c: _pinned(60, 61), "gpu0 power",
        Status.INFO, None, "power-limited"),
    Row("g4.watch", "below the cap", lambda c: sf.series(30, gpu=lambda i: {"power_w": 300.0}), "gpu0 power",
        Status.PASS, None, "below the 700 W cap"),
    Row("g4.watch", "replayed H200: power cap counter, no thermal slowdown", lambda c: sf.recorded(H200),
        "gpu0 slowdown", Status.PASS, None, "the power cap held clocks back 65.3 s"),
    Row("g4.watch", "SW thermal slowdown accumulating (NVML fake)",
        lambda c: sf.series(30, gpu=lambda i: {"sw_thermal_s": 100.0 + 0.4 * i}), "gpu0 slowdown",
        Status.WARN, "27.6 s", "SW thermal slowdown +11.6 s"),
    Row("g4.watch", "no slowdown counters on this GPU",
        lambda c: sf.series(5, rest={"temperature_c": 50}), "gpu0 slowdown", Status.SKIP),
    Row("g4.watch", "GB10 busy at a low clock and draw: stuck (NVML fake)",
        lambda c: _gb10_busy(sm_clock_mhz=850, power_w=28.0), "gpu0 clocks", Status.WARN, "removing power",
        "the stuck low-power state"),
    Row("g4.watch", "GB10 busy and boosting", lambda c: _gb10_busy(sm_clock_mhz=2400, power_w=95.0),
        "gpu0 clocks", Status.PASS, None, "clocks follow the load"),
    Row("g4.watch", "replayed H200: clocks follow the load", lambda c: sf.recorded(H200), "gpu0 clocks",
        Status.PASS, None, "1440–1635 MHz"),
    Row("g4.watch", "GB10 within 10 C of its reported 104.8 C shutdown (NVML fake)",
        lambda c: _gb10_busy(temperature_c=97), "gpu0 temperature", Status.WARN, "spinning CPU cores",
        "7.8 °C below a GB10's reported 104.8 °C"),
    Row("g4.watch", "GB10 at the edge of shutdown (NVML fake)", lambda c: _gb10_busy(temperature_c=102),
        "gpu0 temperature", Status.FAIL, "stop or checkpoint now"),
    Row("g4.watch", "replayed H200: far from NVML's shutdown point", lambda c: sf.recorded(H200),
        "gpu0 temperature", Status.PASS, None, "below NVML's 95 °C shutdown point (peak 61 °C)"),
    Row("g4.watch", "no GPU read", lambda c: sf.series(5, rest={}), "gpu", Status.SKIP),
]  # fmt: skip


@pytest.mark.parametrize("row", ROWS, ids=ids(ROWS))
def test_g4(row, ctx):
    check(row, ctx)

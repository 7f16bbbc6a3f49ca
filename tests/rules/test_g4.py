"""rules/g4.py (live only): thermal and power throttling from NVML. Its best is INFO: a reading."""

from __future__ import annotations

import pytest
import stage_facts as sf
from rule_table import Row, check, ids

from sparkenv.report import Status

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


@pytest.mark.parametrize("row", ROWS, ids=ids(ROWS))
def test_g4(row, ctx):
    check(row, ctx)

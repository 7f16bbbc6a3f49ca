"""rules/g5.py (live only): the GB10's memory bandwidth budget. Its best is INFO: a figure to plan with."""

from __future__ import annotations

import pytest
import stage_facts as sf
from rule_table import Row, check, ids

from sparkenv.core.report import Status


def _measured(base: str, gbps: float):
    return sf.live_raw(base, torch__stages__bandwidth={"gb_per_s": gbps, "bytes": 1 << 30, "iters": 5})


ROWS = [
    Row(
        "g5.live",
        "GB10 within its budget",
        lambda c: _measured("gb10", 185.0),
        "bandwidth",
        Status.INFO,
        None,
        "measured 185 GB/s device copy (GB10 budget 180–192 GB/s)",
    ),
    Row(
        "g5.live",
        "GB10 below its budget",
        lambda c: _measured("gb10", 120.0),
        "bandwidth",
        Status.WARN,
        "look for other GPU work (G6) or throttling (G4)",
    ),
    Row(
        "g5.live",
        "GB10 not measured",
        lambda c: sf.live_raw("gb10"),
        "bandwidth",
        Status.INFO,
        None,
        "plan with 180–192 GB/s sustained, not the 273 GB/s spec",
    ),
    Row(
        "g5.live",
        "an H200 measured",
        lambda c: sf.live_raw("h200-live-bandwidth"),
        "bandwidth",
        Status.INFO,
        None,
        "GB10 budget is 180–192 GB/s",
    ),
]


@pytest.mark.parametrize("row", ROWS, ids=ids(ROWS))
def test_g5(row, ctx):
    check(row, ctx)

"""rules/g3.py (live only): memory on unified memory, from /proc/meminfo. Its best is INFO: memory is
reported, never passed."""

from __future__ import annotations

import pytest
import stage_facts as sf
from rule_table import Row, check, ids

from sparkenv.report import Status

ROWS = [
    Row(
        "g3.live",
        "plenty available",
        lambda c: sf.live_raw("h200-static"),
        "memory",
        Status.INFO,
        None,
        "MemAvailable 125.4 GiB of 125.8 GiB",
    ),
    Row(
        "g3.live",
        "below --need-gb",
        lambda c: sf.live_raw("h200-static", need_gb=200),
        "memory",
        Status.WARN,
        "free memory first",
        "below the 200 GiB this run needs",
    ),
    Row(
        "g3.live",
        "page cache holds the memory",
        lambda c: sf.live_raw("h200-static", meminfo__Cached=60_000_000),
        "memory",
        Status.WARN,
        "drop_caches",
        "the page cache holds memory",
    ),
    Row(
        "g3.live",
        "no meminfo",
        lambda c: sf.live_raw("h200-static", meminfo={"MemFree": 1}),
        "memory",
        Status.ERROR,
    ),
]


@pytest.mark.parametrize("row", ROWS, ids=ids(ROWS))
def test_g3(row, ctx):
    check(row, ctx)

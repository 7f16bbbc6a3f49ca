"""rules/g3.py (live only): memory on unified memory, from /proc/meminfo. Its best is INFO: memory is
reported, never passed."""

from __future__ import annotations

import pytest
import stage_facts as sf
from rule_table import Row, check, ids

from sparkenv.core.report import Status

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


# --- Stage.WATCH ----------------------------------------------------------------------------------------
GIB_KB = 1 << 20


def _falling(start_gib: float, mib_s: float, n: int = 30):
    return sf.series(n, mem=lambda i: {"mem_available_kb": int(start_gib * GIB_KB - mib_s * 1024 * 2 * i)})


ROWS += [
    Row("g3.watch", "replayed H200: memory steady", lambda c: sf.recorded("h200-matmul-cotenant.jsonl"),
        "memory exhaustion", Status.PASS, None, "not running out"),
    Row("g3.watch", "falling 100 MiB/s with 40 GiB left", lambda c: _falling(45.7, 100), "memory exhaustion",
        Status.WARN, "free memory now", "exhausted in ~"),
    Row("g3.watch", "falling 500 MiB/s with 20 GiB left", lambda c: _falling(48.3, 500), "memory exhaustion",
        Status.FAIL, "free memory now", "falling 500 MiB/s"),
    Row("g3.watch", "falling slowly, hours left", lambda c: _falling(100, 5), "memory exhaustion",
        Status.PASS, None, "not running out"),
    Row("g3.watch", "little left, not falling",
        lambda c: sf.series(10, mem=lambda i: {"mem_available_kb": 3 * GIB_KB}), "memory exhaustion",
        Status.WARN, "free memory now", "under 5% left"),
    Row("g3.watch", "page cache holds what the GPU needs",
        lambda c: sf.series(5, mem=lambda i: {"page_cache_kb": 80 * GIB_KB, "mem_free_kb": 4 * GIB_KB}),
        "page cache", Status.WARN, "drop_caches", "the cache holds memory"),
    Row("g3.watch", "page cache small", lambda c: sf.series(5), "page cache", Status.PASS),
    Row("g3.watch", "every task stalled on memory",
        lambda c: sf.series(5, mem=lambda i: {"psi_some_avg10": 80.0, "psi_full_avg10": 65.0}),
        "memory pressure", Status.FAIL, "free memory now", "systemd-oomd"),
    Row("g3.watch", "some stalls",
        lambda c: sf.series(5, mem=lambda i: {"psi_some_avg10": 25.0, "psi_full_avg10": 2.0}),
        "memory pressure", Status.WARN, "free memory now", "waiting on memory"),
    Row("g3.watch", "no stalls", lambda c: sf.series(5), "memory pressure", Status.PASS),
    Row("g3.watch", "a kernel without PSI",
        lambda c: sf.series(5, mem=lambda i: {"psi_some_avg10": None, "psi_full_avg10": None}),
        "memory pressure", Status.SKIP),
]  # fmt: skip


@pytest.mark.parametrize("row", ROWS, ids=ids(ROWS))
def test_g3(row, ctx):
    check(row, ctx)

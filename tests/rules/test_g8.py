"""rules/g8.py (live only): installed versions against the dated list of known playbook problems. Its
worst is INFO with a fix: a known issue is advice, it never blocks a start."""

from __future__ import annotations

import pytest
import stage_facts as sf
from rule_table import Row, check, ids

from sparkenv.core.report import Status

ROWS = [
    Row(
        "g8.live",
        "no known issue matches",
        lambda c: sf.live_raw("h200-static", dists={"torch": "2.11.0+cu130", "transformers": "5.13.1"}),
        "playbooks",
        Status.PASS,
        None,
        "no known playbook issue matches",
    ),
    Row(
        "g8.live",
        "bitsandbytes 0.49.1 with Unsloth",
        lambda c: sf.live_raw("h200-static", dists={"bitsandbytes": "0.49.1", "unsloth": "2026.1.4"}),
        "playbooks#57",
        Status.INFO,
        "use bitsandbytes 0.49.2 or newer",
        "compress_statistics",
    ),
    Row(
        "g8.live",
        "installed packages unknown",
        lambda c: sf.live_raw("h200-static", dists=None, probe_errors={"dists": "timed out"}),
        "playbooks",
        Status.ERROR,
    ),
]


@pytest.mark.parametrize("row", ROWS, ids=ids(ROWS))
def test_g8(row, ctx):
    check(row, ctx)

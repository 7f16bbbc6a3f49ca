"""Rows of rules/attest_g2.py (G2 at Stage.ATTEST): the attention backend the window's kernels ran, from
records taken on an H100 (tests/fixtures/attest/), against the one asked for."""

from __future__ import annotations

import attest_helpers as ah
import pytest
from rule_table import Row, check, ids

from sparkenv.core.report import Status

RULE = "attest_g2.attention"

ROWS = [
    Row(RULE, "SDPA asked, SDPA flash ran", lambda c: ah.facts("sdpa-flash"), "attention", Status.PASS,
        None, "SDPA flash (67.6 % of GPU time) as asked"),
    Row(RULE, "SDPA asked, memory-efficient ran", lambda c: ah.facts("sdpa-efficient"), "attention",
        Status.PASS, None, "SDPA memory-efficient (76.0 %"),
    Row(RULE, "SDPA asked, cuDNN ran", lambda c: ah.facts("sdpa-cudnn"), "attention", Status.PASS, None,
        "SDPA cuDNN (57.6 %"),
    Row(RULE, "the SDPA override wanted (SPARKENV_SDPA=1), SDPA ran",
        lambda c: ah.facts("sdpa-flash", None, SPARKENV_SDPA="1"), "attention", Status.PASS, None,
        "as asked"),
    Row(RULE, "the math fallback ran", lambda c: ah.facts("sdpa-math"), "attention", Status.WARN,
        "bf16/fp16", "math fallback: 48.6 % of the window's GPU time"),
    Row(RULE, "SDPA asked, flash-attn ran", lambda c: ah.gathered(ah.flash_attn_ran(c.tmp_path)),
        "attention", Status.FAIL, "sparkenv patch sdpa --install",
        "ran flash-attn, not the SDPA asked for: 67.6 %"),
    Row(RULE, "SDPA asked through SPARKENV_SDPA, flash-attn ran",
        lambda c: ah.gathered(ah.flash_attn_ran(c.tmp_path), None, {"SPARKENV_SDPA": "on"}), "attention",
        Status.FAIL, "sparkenv patch sdpa --install", "not the SDPA asked for"),
    Row(RULE, "nothing asked, flash-attn ran", lambda c: ah.gathered(ah.flash_attn_ran(c.tmp_path), "any"),
        "attention", Status.PASS, None, "attention ran flash-attn (67.6 %"),
    Row(RULE, "flash-attn asked, SDPA flash ran", lambda c: ah.facts("sdpa-flash", "flash-attn"), "attention",
        Status.FAIL, "sparkenv gate --deep", "ran SDPA flash, not the flash-attn asked for"),
    Row(RULE, "no attention in the window", lambda c: ah.facts("ext-sass"), "attention", Status.INFO, None,
        "no attention kernel ran"),
]  # fmt: skip


@pytest.mark.parametrize("row", ROWS, ids=ids(ROWS))
def test_g2_attest(row, ctx):
    check(row, ctx)

"""Rows of rules/attest_g2.py (G2 at Stage.ATTEST): the attention backend the window's kernels ran, from
records taken on an H100 (tests/fixtures/attest/), against the one asked for."""

from __future__ import annotations

import re

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
    Row(RULE, "the math fallback ran where fused backends exist (SM 9.0)", lambda c: ah.facts("sdpa-math"),
        "attention", Status.WARN, "bf16/fp16",
        "attention ran SDPA math, the fallback: 48.6 % of the window's GPU time, while SDPA flash, "
        "SDPA cuDNN, SDPA memory-efficient exist for SM 9.0"),
    Row(RULE, "the math fallback on a GPU the data names no faster backend for",
        lambda c: ah.on_capability(ah.facts("sdpa-math"), (7, 0)), "attention", Status.INFO, None,
        "the data names no faster backend for SM 7.0"),
    Row(RULE, "SDPA asked, flash-attn ran", lambda c: ah.gathered(ah.flash_attn_ran(c.tmp_path)),
        "attention", Status.FAIL,
        "install the SDPA override (sparkenv patch sdpa --install) or uninstall flash-attn; see `sparkenv "
        "explain G2`", "ran flash-attn, not the SDPA asked for: 91.1 % of the window's GPU time"),
    Row(RULE, "the same model with flash-attn not importable: the SDPA it asked for ran",
        lambda c: ah.facts("flash-sdpa"), "attention", Status.PASS, None,
        "attention ran SDPA cuDNN (14.2 % of GPU time) as asked (SDPA)"),
    Row(RULE, "SDPA asked through SPARKENV_SDPA, flash-attn ran",
        lambda c: ah.gathered(ah.flash_attn_ran(c.tmp_path), None, {"SPARKENV_SDPA": "on"}), "attention",
        Status.FAIL, "sparkenv patch sdpa --install", "not the SDPA asked for"),
    Row(RULE, "nothing asked, flash-attn ran", lambda c: ah.gathered(ah.flash_attn_ran(c.tmp_path), "any"),
        "attention", Status.PASS, None, "attention ran flash-attn (91.1 %"),
    Row(RULE, "flash-attn asked, SDPA flash ran", lambda c: ah.facts("sdpa-flash", "flash-attn"), "attention",
        Status.FAIL, "sparkenv gate --deep", "ran SDPA flash, not the flash-attn asked for"),
    Row(RULE, "no attention in the window", lambda c: ah.facts("ext-sass"), "attention", Status.INFO, None,
        "no attention kernel ran"),
    Row(RULE, "numpy's window: NVML's record only, no probe record", lambda c: ah.facts("nvml-numpy"),
        "attention", Status.SKIP, None, "no attest record: no process loaded torch with the probe"),
    Row(RULE, "a CPU-only torch's window: no GPU kernel", lambda c: ah.facts("nvml-torch-cpu"), "attention",
        Status.SKIP, None, "no GPU kernel ran in the window: attention not seen"),
    Row(RULE, "the math fallback where the record names no GPU",
        lambda c: ah.on_capability(ah.facts("sdpa-math"), None), "attention", Status.INFO, None,
        "attention ran SDPA math, the fallback: 48.6 % of the window's GPU time; the data names no faster "
        "backend for a GPU not recorded"),
]  # fmt: skip


@pytest.mark.parametrize("row", ROWS, ids=ids(ROWS))
def test_g2_attest(row, ctx):
    check(row, ctx)


def test_the_flash_attn_fail_names_the_library_its_kernel_came_from(tmp_path):
    """From the H100 record: the stand-in's kernel is traced to libflash_standin.so by its cubin's symbol
    table, not only named flash-attn's by its namespace."""
    from sparkenv.rules.attest_g2 import attention

    (found,) = attention(ah.gathered(ah.flash_attn_ran(tmp_path)))
    assert found.status is Status.FAIL
    assert any(
        e.startswith("its kernels come from libflash_standin.so (by symbol table): 2,788.1 ms")
        for e in found.evidence
    ), found.evidence


def test_a_pass_shows_each_backends_time_and_what_was_asked():
    from sparkenv.knowledge import kernel_paths
    from sparkenv.rules.attest_g2 import attention

    (found,) = attention(ah.facts("sdpa-flash"))
    assert found.status is Status.PASS
    source = next(a.source for a in kernel_paths().attention if a.name == "SDPA flash")
    # the record's launches of SDPA flash's kernels, every row of them counted
    shown = rf"SDPA flash: [\d,]+\.\d ms, 67\.6 % of GPU time, 10,578 launches \({re.escape(source)}\)"
    assert any(re.fullmatch(shown, e) for e in found.evidence), found.evidence
    assert found.evidence[-1] == "asked for: --attention sdpa", found.evidence


def test_no_attention_still_says_what_was_asked():
    from sparkenv.rules.attest_g2 import attention

    (found,) = attention(ah.facts("ext-sass"))
    assert found.status is Status.INFO and found.evidence == ("asked for: --attention sdpa",), found

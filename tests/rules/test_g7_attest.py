"""Rows of rules/attest_g7.py (G7 at Stage.ATTEST): PTX JIT-compiled in the window, GPU operators run on
the CPU, and GPU time per family, from records taken on an H100 (tests/fixtures/attest/)."""

from __future__ import annotations

import attest_helpers as ah
import pytest
from rule_table import Row, check, ids

from sparkenv.core.report import Status

RULE = "attest_g7.kernels"
JIT = "CUDA JIT cache"

ROWS = [
    Row(RULE, "machine code for the GPU: the JIT cache stays empty", lambda c: ah.facts("ext-sass"), JIT,
        Status.PASS, None, "stayed empty"),
    Row(RULE, "a PTX-only extension: JIT-compiled, its library named",
        lambda c: ah.gathered(ah.relocated(c.tmp_path, "ext-ptx", "libext_ptx.so")), JIT, Status.WARN,
        "code=sm_XY", "2 file(s), 5.1 KiB in the private cache; PTX only for this GPU in libext_ptx.so"),
    Row(RULE, "cuDNN's run-time generated attention kernels fill the cache by design",
        lambda c: ah.facts("sdpa-cudnn"), JIT, Status.INFO, "CUDA_CACHE_PATH on a volume",
        "the kernels cuDNN attention generates at run time"),
    Row(RULE, "a Linear layer left on the CPU", lambda c: ah.facts("cpu-op"), "aten::linear", Status.FAIL,
        ".to('cuda')", "aten::linear ran on the CPU 718 times: 731.1 ms, 9.1 % of the 8.0 s window"),
    Row(RULE, "every operator on the GPU", lambda c: ah.facts("sdpa-math"), "operators on the CPU",
        Status.PASS, None, "no GPU operator ran on the CPU"),
    Row(RULE, "a training step's table adds up", lambda c: ah.facts("train"), "GPU time", Status.PASS, None,
        "the families' shares add up to 100.0 % of the profiler's total"),
    Row(RULE, "a family's row", lambda c: ah.facts("train"), "family cuDNN attention", Status.INFO, None,
        "cuDNN attention (cuDNN): "),
    Row(RULE, "a killed process: the record is partial",
        lambda c: ah.gathered(ah.cut(c.tmp_path, "train", 30)), "GPU time", Status.WARN, "--seconds",
        "the window did not end in pid"),
]  # fmt: skip


@pytest.mark.parametrize("row", ROWS, ids=ids(ROWS))
def test_g7_attest(row, ctx):
    check(row, ctx)

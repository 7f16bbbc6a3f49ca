"""From the records taken on an H100 (tests/fixtures/attest/) to families, libraries and attention backends:
each SDPA backend forced in turn is named as the one that ran; a training step's families add up to the
total torch's own profiler table prints; the extension built with PTX only reads as PTX only."""

from __future__ import annotations

import dataclasses
import json
import re

import attest_helpers as ah
import pytest

from sparkenv.cuda import fatbin
from sparkenv.rules import attest_kernels as ak
from sparkenv.rules.g7_coverage import judge


@pytest.mark.parametrize(
    ("record", "backend", "kernel"),
    [
        ("sdpa-flash", "SDPA flash", "pytorch_flash::flash_fwd_kernel"),
        ("sdpa-efficient", "SDPA memory-efficient", "fmha_cutlassF_bf16_aligned"),
        ("sdpa-cudnn", "SDPA cuDNN", "cudnn_generated_fort_native_sdpa_sm90_flash_fprop"),
        ("sdpa-math", "SDPA math", "sm80_xmma_gemm_f32f32"),
    ],
)
def test_each_forced_sdpa_backend_is_named_as_the_one_that_ran(record, backend, kernel):
    rows = ah.facts(record).kernels
    ran = ak.backends(rows)
    assert [a.name for a, _n, _ns in ran] == [backend]
    # the backend's kernels are the ones the forced backend launches, named in the record
    assert any(kernel in r.name and ak.attention(r) is ran[0][0] for r in rows)


def test_flash_attn_kernels_are_flash_attn_not_sdpa(tmp_path):
    rows = ah.gathered(ah.flash_attn_ran(tmp_path)).kernels
    assert [a.name for a, _n, _ns in ak.backends(rows)] == ["flash-attn"]
    named = {ak.family(r.name).name for r in rows if r.name.startswith("void flash::")}  # type: ignore[union-attr]
    assert named == {"flash-attn"}


def test_a_training_steps_families_add_up_to_torchs_own_total_within_2_percent():
    """The probe's reader ran over a torch.profiler profile of ten training steps on the H100; torch's own
    table of that profile printed its 'Self CUDA time total'."""
    cross = json.loads(ah.fixture("train-crosscheck.json").read_text())
    rows = [ah.one_row(r) for r in cross["rows"] if r["kind"] == "kernel"]
    shares = ak.families(rows)
    ours_ns = sum(s.gpu_ns for s in shares)
    footer = next(ln for ln in cross["torch_table_footer"] if "CUDA time total" in ln)
    value, unit = re.search(r"([\d.]+)\s*(ms|us|s)\b", footer).groups()  # type: ignore[union-attr]
    torch_ns = float(value) * {"s": 1e9, "ms": 1e6, "us": 1e3}[unit]
    assert abs(ours_ns - torch_ns) <= 0.02 * torch_ns, (ours_ns, footer)
    assert abs(sum(s.of(ours_ns) for s in shares) - 1.0) < 1e-9
    assert abs(sum(s.of(ours_ns) for s in ak.libraries(rows)) - 1.0) < 1e-9
    # every kernel of the step is attributed to a family but a sliver
    other = next((s for s in shares if s.name == ak.OTHER), None)
    assert other is None or other.of(ours_ns) < 0.01


@pytest.mark.parametrize(
    "record", ["sdpa-flash", "sdpa-efficient", "sdpa-cudnn", "sdpa-math", "train", "cpu-op"]
)
def test_the_recorded_kernels_are_attributed(record):
    rows = ah.facts(record).kernels
    shares = ak.families(rows)
    total = sum(s.gpu_ns for s in shares)
    other = next((s for s in shares if s.name == ak.OTHER), None)
    assert total and (other is None or other.of(total) < 0.01), [(s.name, s.of(total)) for s in shares]


@pytest.mark.parametrize(
    ("library", "targets", "jit"),
    [("libext_ptx.so", ("compute_90",), True), ("libext_sass.so", ("sm_90",), False)],
)
def test_the_extensions_gpu_code_as_the_fatbin_reader_reads_it(library, targets, jit):
    """nvcc 13.0 built both on the GPU machine (-gencode arch=compute_90,code=compute_90 / code=sm_90)."""
    found = fatbin.scan(str(ah.fixture(library)))
    assert tuple(sorted(t.name for t in found.targets)) == targets
    cov = judge(found.targets, (9, 0))
    assert bool(cov.jit) is jit and bool(cov.native) is not jit


@pytest.mark.parametrize("record", ["train", "sdpa-math"])
def test_each_table_counts_every_launch_and_kernel_once(record):
    # the family and library tables split one window: their launches and distinct kernels add up to the
    # record's, whichever way it is cut
    rows = ah.facts(record).kernels
    launches, kernels = sum(r.count for r in rows), len({r.name for r in rows})
    for shares in (ak.families(rows), ak.libraries(rows)):
        assert sum(s.launches for s in shares) == launches, shares
        assert sum(s.kernels for s in shares) == kernels, shares


def test_a_window_without_gpu_time_is_0_percent_not_a_division_by_zero():
    assert ak.percent(0, 0) == "0 %"
    assert ak.Share("other", ak.OTHER_LIBRARY, 1, 1, 0).of(0) == 0.0


def _math_share(math_ns: int, other_ns: int):
    """The math fallback's share of a window: one of sdpa-math's SDPA math kernels (launched under
    aten::scaled_dot_product_attention) beside one of its kernels outside attention, GPU times set."""
    rows = ah.facts("sdpa-math").kernels
    math = next(r for r in rows if ak.attention(r) is not None)
    other = next(r for r in rows if ak.attention(r) is None)
    window = [dataclasses.replace(math, gpu_ns=math_ns), dataclasses.replace(other, gpu_ns=other_ns)]
    return ak.slower_paths(window, (9, 0), "G2")


def test_the_fallbacks_share_is_its_part_of_the_window():
    (slow,) = ak.slower_paths(ah.facts("sdpa-math").kernels, (9, 0), "G2")
    assert (
        slow.path.slow == ("SDPA math",) and round(slow.share, 3) == 0.486 and slow.hot and slow.faster_here
    )


@pytest.mark.parametrize(("math_ns", "hot"), [(100, True), (99, False)])
def test_a_tenth_of_the_window_is_hot(math_ns, hot):
    # data/kernel_paths.toml: hot_share = 0.10, "holding hot_share of the window's GPU time or more is hot"
    (slow,) = _math_share(math_ns, 1000 - math_ns)
    assert slow.share == math_ns / 1000 and slow.hot is hot

"""cuda/coverage.py's small decisions every G7 verdict rests on: which target runs on which GPU, per
data/kernels.toml's `runs_on` (a cubin of the same major and an older minor, PTX of any older GPU, an
arch-specific build only on its own GPU), how a target name and a capability are spelled, and what
`--gpu` accepts (audit, build)."""

from __future__ import annotations

import pytest

from sparkenv.core.errors import SparkenvError
from sparkenv.cuda import coverage
from sparkenv.cuda.targets import KernelTarget

GB10, H200, RTX5090 = (12, 1), (9, 0), (12, 0)


@pytest.mark.parametrize(
    ("target", "cap", "runs"),
    [
        ("sm_120", GB10, True),  # same major, older minor
        ("sm_121", GB10, True),
        ("sm_121", RTX5090, False),  # a newer minor does not run on an older one
        ("sm_90", GB10, False),  # another major
        ("sm_121a", GB10, True),  # arch-specific: its own GPU only
        ("sm_120a", GB10, False),
        ("sm_120f", GB10, True),  # family: the major's later minors
        ("compute_121", GB10, True),  # PTX of this very GPU
        ("compute_90", GB10, True),  # PTX of an older GPU: the driver compiles it
        ("compute_120", H200, False),  # PTX of a newer GPU
        ("compute_121a", RTX5090, False),
        ("lto_121", GB10, True),
    ],
)
def test_which_target_runs_on_which_gpu(target, cap, runs):
    parsed = coverage.parse_target(target)
    assert parsed is not None and parsed.name == target
    assert coverage.runs_on(parsed, cap) is runs


def test_a_target_kind_or_variant_the_data_does_not_know_runs_nowhere():
    assert coverage.runs_on(KernelTarget("sass", 121, ""), GB10) is False
    assert coverage.runs_on(KernelTarget("sm", 121, "x"), GB10) is False


def test_names_that_are_not_targets():
    for name in ("sm121", "sm_1", "ptx_90", "compute_1210", "sm_121b", ""):
        assert coverage.parse_target(name) is None, name
    target = KernelTarget("sm", 90, "")
    assert coverage.parse_target(target) is target


def test_native_keeps_only_the_cubins_that_run():
    names = ["sm_80", "compute_120", "sm_121a", "sm_120", "sm_121a", "not-a-target"]
    assert coverage.native(names, GB10) == ("sm_120", "sm_121a")
    assert coverage.native(names, H200) == ()


@pytest.mark.parametrize(
    ("text", "cap"), [("compute_90", H200), ("sm_120f", RTX5090), ("compute_121a", GB10), (" 12,1 ", GB10)]
)
def test_capabilities_spelled_as_targets(text, cap):
    assert coverage.parse_capability(text) == cap


def test_the_gpu_option():
    assert coverage.parse_gpu_option(None) == coverage.gb10() == GB10
    assert coverage.parse_gpu_option("9.0") == H200
    assert coverage.parse_gpu_option(" None ") is None
    with pytest.raises(SparkenvError) as raised:
        coverage.parse_gpu_option("hopper")
    assert str(raised.value) == "--gpu 'hopper': not a GPU capability (like 12.1 or 9.0) or 'none'"


def test_gpu_labels():
    assert coverage.gpu_label(GB10) == "GB10 (12.1)"
    assert coverage.gpu_label(H200) == "capability 9.0"

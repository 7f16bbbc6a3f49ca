"""cuda/toolchain.py's readings under G7's toolchain verdicts: the release found in a ptxas binary's bytes
(the real CUDA 13 ptxas, and files that only look like one), the release a capability's arch-specific
target needs (data/toolchain.toml), and TORCH_CUDA_ARCH_LIST's parts as target names. test_toolchain.py
judges whole verdicts; these are the values they are made of."""

from __future__ import annotations

import os
from pathlib import Path

import pytest
from kernel_helpers import cuda_ptxas

from sparkenv.cuda import toolchain


def test_the_release_in_the_bytes_of_a_file(tmp_path: Path):
    """The first prefix that a release follows is the one read: a prefix without one is passed over."""
    tool = tmp_path / "ptxas"
    tool.write_bytes(
        b"\x7fELF Cuda compilation tools, release  then Cuda compilation tools, release 12.8, V12.8.93"
    )
    assert toolchain.ptxas_release_of_file(str(tool)) == "12.8"
    tool.write_bytes(tool.read_bytes() + b" Cuda compilation tools, release 13.0")  # the first one found
    assert toolchain.ptxas_release_of_file(str(tool)) == "12.8"
    tool.write_bytes(b"Cuda compilation tools, release 09.02")
    assert toolchain.ptxas_release_of_file(str(tool)) == "9.2"  # numbers, as --version prints them


def test_files_that_hold_no_release(tmp_path: Path):
    none = tmp_path / "not-ptxas"
    none.write_bytes(b"Cuda compilation tools, release x.y")
    assert toolchain.ptxas_release_of_file(str(none)) is None
    empty = tmp_path / "empty"
    empty.write_bytes(b"")
    assert toolchain.ptxas_release_of_file(str(empty)) is None
    assert toolchain.ptxas_release_of_file(str(tmp_path / "missing")) is None
    assert toolchain.ptxas_release_of_file(str(tmp_path)) is None  # a folder


def test_a_file_past_the_size_cap_is_not_read(tmp_path: Path):
    big = tmp_path / "ptxas"
    with open(big, "wb") as fh:
        fh.write(b"Cuda compilation tools, release 13.0, V13.0.88")
        fh.truncate(toolchain._MAX_TOOL_BYTES + 1)  # sparse: no disk spent
    assert toolchain.ptxas_release_of_file(str(big)) is None
    os.truncate(big, toolchain._MAX_TOOL_BYTES)
    assert toolchain.ptxas_release_of_file(str(big)) == "13.0"


def test_the_real_ptxas():
    release = toolchain.ptxas_release_of_file(str(cuda_ptxas()))
    assert release is not None and toolchain.release_tuple(release) >= (13, 0)


def test_text_and_release_tuples():
    assert toolchain.ptxas_release_of_text("Cuda compilation tools, release 12.9, V12.9.86") == "12.9"
    assert toolchain.ptxas_release_of_text(b"ptxas: NVIDIA (R) Ptx optimizing assembler") is None
    assert toolchain.release_tuple("12.9") == (12, 9)
    assert toolchain.release_tuple("13") == (13, 0)


def test_the_release_an_arch_specific_target_needs():
    assert toolchain.min_ptxas((12, 1)) == "12.9"
    assert toolchain.min_ptxas((9, 0)) == "11.8"
    assert toolchain.min_ptxas((7, 5)) is None


@pytest.mark.parametrize(
    ("value", "names"),
    [
        ("8.0 8.6 9.0 12.0+PTX", ["sm_80", "sm_86", "sm_90", "sm_120", "compute_120"]),
        ("9.0a;12.1", ["sm_90a", "sm_121"]),
        ("12.0F+ptx, 10.0", ["sm_120f", "compute_120f", "sm_100"]),
        ("  ", []),
        (";9.0;", ["sm_90"]),  # empty parts between separators are passed over
        ("9.0 sm_90", None),
        ("12.10", None),
    ],
)
def test_arch_list_parts(value, names):
    assert toolchain.parse_arch_list(value) == names

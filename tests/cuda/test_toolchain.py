"""G7 toolchain verdicts: Triton's ptxas and TORCH_CUDA_ARCH_LIST, on real binaries and recorded values."""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest
from kernel_helpers import cuda_ptxas

from sparkenv.core.report import Status
from sparkenv.cuda import toolchain
from sparkenv.rules import g7 as judged

GB10, H200 = (12, 1), (9, 0)
RECORDED = Path(__file__).parents[1] / "fixtures" / "machines" / "h200" / "ptxas-versions.txt"


def test_release_read_from_the_file_matches_ptxas_version():
    """The audit reads the release from the binary's bytes (nothing run); it agrees with --version."""
    real = cuda_ptxas()
    out = subprocess.run([str(real), "--version"], capture_output=True, text=True, timeout=30).stdout
    assert toolchain.ptxas_release_of_file(str(real)) == toolchain.ptxas_release_of_text(out)
    assert toolchain.ptxas_release_of_text(out).startswith("13.")


def test_recorded_triton_and_torch_ptxas_of_the_h200():
    """triton 3.6.0's bundled ptxas is CUDA 12.8; torch 2.11's is 13.0 (recorded on the device)."""
    parts = RECORDED.read_text().split("== ")[1:]
    releases = {
        p.splitlines()[0].split("/site-packages/")[1]: toolchain.ptxas_release_of_text(p) for p in parts
    }
    assert releases == {"triton/backends/nvidia/bin/ptxas": "12.8", "torch/bin/ptxas": "13.0"}


def tools(bundled, env=None, releases=None, name="triton", version="3.6.0"):
    return toolchain.TritonTools(name, version, bundled, env or {}, releases or {})


def test_live_gate_fails_on_a_ptxas_that_rejects_sm_121a():
    old = tools({"ptxas": "12.8"}, version="3.4.0")
    assert judged.judge_triton_ptxas(old, GB10, live=True).status is Status.FAIL
    assert judged.judge_triton_ptxas(old, GB10, live=False).status is Status.WARN
    assert judged.judge_triton_ptxas(old, H200, live=True).status is Status.PASS
    fixed = tools(
        {"ptxas": "12.8"},
        {"TRITON_PTXAS_PATH": "/usr/local/cuda/bin/ptxas"},
        {"/usr/local/cuda/bin/ptxas": "13.0"},
    )
    assert judged.judge_triton_ptxas(fixed, GB10, live=True).status is Status.PASS


def test_blackwell_tool_and_its_own_variable():
    """Triton 3.5+ compiles for 10.x/12.x with ptxas-blackwell; TRITON_PTXAS_PATH does not reach it."""
    t = tools({"ptxas": "12.8", "ptxas-blackwell": "12.8"}, {"TRITON_PTXAS_PATH": "/x"}, {"/x": "13.0"})
    f = judged.judge_triton_ptxas(t, GB10, live=True)
    assert f.status is Status.FAIL
    assert "TRITON_PTXAS_PATH is set but Triton uses TRITON_PTXAS_BLACKWELL_PATH" in f.summary
    assert f.fix.startswith("export TRITON_PTXAS_BLACKWELL_PATH=")
    gone = tools({"ptxas-blackwell": "13.0"}, {"TRITON_PTXAS_BLACKWELL_PATH": "/missing"}, {"/missing": None})
    assert judged.judge_triton_ptxas(gone, GB10, live=True).status is Status.FAIL


@pytest.mark.parametrize(
    ("value", "status"),
    [
        ("8.0 8.6 9.0 10.0 11.0 12.0+PTX", Status.PASS),  # NGC 25.10's value (FACTS)
        ("12.1", Status.PASS),  # Unsloth's DGX Spark Dockerfile
        ("9.0a", Status.FAIL),  # the H200 device image's value, on a GB10
        ("12.0a", Status.FAIL),
        ("9.0+PTX", Status.WARN),
        ("8.0;9.0;12.0", Status.PASS),
        ("sm_90", Status.WARN),  # not the variable's syntax
    ],
)
def test_arch_list(value, status):
    f = judged.judge_arch_list(value, GB10, "the gate environment")
    assert f.status is status, f.summary
    assert f.subject == "TORCH_CUDA_ARCH_LIST"


def test_arch_list_unset_says_nothing():
    assert judged.judge_arch_list(None, GB10, "x") is None
    assert judged.judge_arch_list("9.0a", H200, "x").status is Status.PASS

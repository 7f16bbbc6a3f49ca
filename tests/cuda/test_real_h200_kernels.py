"""G7 on the real H200 machine's torch 2.11 venv (846 shared objects), recorded on the device: zero false
FAIL for its own 9.0 and for a GB10's 12.1 — the nvidia-cufft .ldata trap and nvidia-cufile included."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from sparkenv.core.report import Status
from sparkenv.cuda import coverage
from sparkenv.rules import g7

FIXTURES = Path(__file__).parents[1] / "fixtures"
CENSUS = FIXTURES / "machines" / "h200" / "kernel-census.json"
FACTS = FIXTURES / "facts" / "h200-static-kernels.json"


def census() -> list[dict]:
    return json.loads(CENSUS.read_text())["distributions"]


def verdicts(cap: coverage.Capability) -> dict[str, Status]:
    out = {}
    for d in census():
        objects = [
            coverage.ObjectKernels(
                o["path"],
                tuple(o["targets"]),
                o["complete"],
                o["problem"],
                tuple(o["sections"]),
                o["payload"],
            )
            for o in d["objects"]
        ]
        out[d["dist"]] = g7.package_finding(d["dist"], d["version"], objects, cap, "x").status
    return out


@pytest.mark.parametrize("cap", [(9, 0), (12, 1)])
def test_no_false_fail_or_warn_on_the_real_venv(cap):
    got = verdicts(cap)
    assert len(got) == 16
    assert got.pop("nvidia-cufile") is Status.INFO  # a 4 KiB compute_86 PTX, JIT-compiled in no time
    assert set(got.values()) == {Status.PASS}, got


def test_cufft_kernels_are_read_from_ldata():
    cufft = next(d for d in census() if d["dist"] == "nvidia-cufft")
    lib = next(o for o in cufft["objects"] if o["path"].endswith("libcufft.so.12"))
    assert ".ldata" in lib["sections"] and {"sm_90", "sm_120", "lto_75"} <= set(lib["targets"])
    wrapper = next(o for o in cufft["objects"] if o["path"].endswith("libcufftw.so.12"))
    assert wrapper["targets"] == ["sm_75"]  # alone it would be a false FAIL: the package decides


def test_gate_replay_of_the_recorded_h200(run, tmp_path):
    """The gate's own snapshot on the H200 (static mode): every package's G7 line, none FAIL."""
    r = run("gate", "--facts", str(FACTS))
    g7 = [ln for ln in r.lines if ln.startswith("G7 ")]
    assert not [ln for ln in g7 if ln.startswith(("G7 FAIL", "G7 WARN", "G7 ERROR"))], g7
    assert any(ln.startswith("G7 PASS: torch 2.11.0") for ln in g7)
    assert any(
        ln.startswith("G7 PASS: triton 3.6.0 compiles with its bundled ptxas (CUDA 12.8)") for ln in g7
    )
    assert any(ln.startswith('G7 PASS: TORCH_CUDA_ARCH_LIST="9.0a"') for ln in g7)

"""A CUDA workload started without a GPU (a container run without --gpus all): its first CUDA call will
fail. Under --policy strict in front of the workload that is a FAIL that stops the start and names
`--gpus all`; under warn it stays a WARN and the workload starts. The facts are the recorded H200
machine's (tests/fixtures) with its GPU taken away, replayed; the workload is a real process."""

from __future__ import annotations

import gate_helpers as gh
import pytest


@pytest.fixture
def no_gpu(tmp_path):  # type: ignore[no-untyped-def]
    h200 = gh.h200_from_outputs()
    torch = {
        "returncode": 0,
        "stages": {
            "imported": h200["torch"]["stages"]["imported"],
            "devices": {"available": False, "count": 0},
        },
    }
    gone = gh.with_changes(h200, smi={"available": False, "error": "nvidia-smi not found"}, torch=torch)
    return gh.write(tmp_path, gone, "no-gpu.json")


def test_strict_stops_a_cuda_workload_without_a_gpu(run, no_gpu) -> None:  # type: ignore[no-untyped-def]
    r = run("gate", "--facts", no_gpu, "--policy", "strict", "--", "echo", "workload-ran")
    assert r.code == 1 and "workload-ran" not in r.out, r.out + r.err
    line = next(ln for ln in r.err.splitlines() if ln.startswith("G1 FAIL"))
    assert "no GPU is visible" in line and "--gpus all" in line
    assert "start blocked by 1 FAIL (policy strict)" in r.err


def test_warn_starts_it_with_a_warning(run, no_gpu) -> None:  # type: ignore[no-untyped-def]
    r = run("gate", "--facts", no_gpu, "--policy", "warn", "--", "echo", "workload-ran")
    assert r.code == 0 and "workload-ran" in r.out, r.out + r.err
    assert any(ln.startswith("G1 WARN") and "--gpus all" in ln for ln in r.err.splitlines())


def test_without_a_workload_strict_only_reports(run, no_gpu) -> None:  # type: ignore[no-untyped-def]
    r = run("gate", "--facts", no_gpu, "--policy", "strict")
    assert r.line("G1", "torch").startswith("G1 WARN")

"""Real wheels from the public index, installed by pip into a throwaway venv, then audited."""

from __future__ import annotations

import glob
import subprocess
import sys
from pathlib import Path

import pytest

pytestmark = pytest.mark.network


def _venv(path: Path) -> Path:
    subprocess.run([sys.executable, "-m", "venv", str(path)], check=True, timeout=300)
    return path / "bin" / "python"


def _pip(python: Path, *args: str) -> None:
    proc = subprocess.run(
        [str(python), "-m", "pip", "install", "-q", "--no-deps", "--disable-pip-version-check", *args],
        capture_output=True,
        text=True,
        timeout=900,
    )
    assert proc.returncode == 0, f"pip install {args} failed (network?):\n{proc.stderr[-2000:]}"


def test_cuda12_runtime_next_to_cuda13_runtime(tmp_path: Path, run, clean_root):
    python = _venv(tmp_path / "v")
    _pip(python, "nvidia-cuda-runtime-cu12==12.8.90", "nvidia-cuda-runtime==13.0.96")
    r = run("audit", str(tmp_path / "v"), "--root", str(clean_root), "--json")
    findings = {f["subject"]: f for f in r.json()["findings"] if f["id"] == "G1"}
    cu12 = findings["nvidia-cuda-runtime-cu12"]
    assert cu12["status"] == "WARN" and "residue" in cu12["summary"] and "next to CUDA 13" in cu12["summary"]
    assert any("libcudart.so.12" in e for e in cu12["evidence"])  # read from the real ELF's DT_SONAME
    cu13 = findings["nvidia-cuda-runtime"]
    assert cu13["status"] == "PASS" and "needs CUDA 13" in cu13["summary"]
    assert any("nvidia/cu13/" in e for e in cu13["evidence"])
    assert r.code == 0


def test_consumer_requiring_the_cuda12_runtime_fails(tmp_path: Path, run, clean_root):
    """cupy-cuda12x dlopens CUDA (no DT_NEEDED): the name is the evidence."""
    python = _venv(tmp_path / "v")
    _pip(python, "nvidia-cuda-runtime-cu12==12.8.90", "cupy-cuda12x==13.6.0")
    r = run("audit", str(tmp_path / "v"), "--root", str(clean_root))
    assert r.line("G1", "cupy-cuda12x 13.6.0").startswith("G1 FAIL") and "cupy-cuda13x" in r.out
    assert r.code == 1


def test_cpu_only_torch_wheel(tmp_path: Path, run, clean_root):
    local = sorted(glob.glob("/opt/wheels/torch-*+cpu-*.whl"))
    if not local:
        pytest.skip("no local CPU-only torch wheel here, and PyPI's x86_64 torch is the multi-GB CUDA build")
    python = _venv(tmp_path / "v")
    _pip(python, local[-1])
    r = run("audit", str(tmp_path / "v"), "--root", str(clean_root))
    line = r.line("G1", "torch ")
    assert line.startswith("G1 FAIL") and "CPU-only" in line

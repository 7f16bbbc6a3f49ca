"""On the public index: a pin with no aarch64 wheel is a G1 finding whose fix names the nearest release
that has one (read from the whole project page, old releases included), and that fix resolves for the
Spark when tried (`uv pip compile` for aarch64, wheels only) and locks without the finding."""

from __future__ import annotations

import re
import subprocess

import pytest

from sparkenv.index.uv_binary import uv_binary

pytestmark = pytest.mark.network


def _lock(run, tmp_path, text: str):
    req = tmp_path / "requirements.txt"
    req.write_text(text)
    env = {"UV_CACHE_DIR": str(tmp_path / "uv"), "SPARKENV_CACHE_DIR": str(tmp_path / "sparkenv")}
    return run("lock", str(req), "--profile", "spark-bare", "--output-dir", str(tmp_path / "out"), "--json",
               env=env)  # fmt: skip


def test_a_pin_without_an_aarch64_wheel_gets_a_fix_that_resolves(run, tmp_path):
    r = _lock(run, tmp_path, "onnxruntime-gpu==1.22.0\n")  # its wheels are x86_64 (and Windows) only
    assert r.code == 1, r.out + r.err
    (f,) = [f for f in r.json()["findings"] if f["subject"] == "onnxruntime-gpu" and f["status"] == "FAIL"]
    assert f["id"] == "G1" and "no wheel of it fits aarch64" in f["summary"]
    # the fix that was tried and re-resolved: the CUDA 13 counterpart from sparkenv's data, ahead of the
    # nearest release with an aarch64 wheel (a CUDA 12 build)
    m = re.search(r"^(?:require|write) (onnxruntime-gpu\S*) .* — tried: it re-resolves for aarch64", f["fix"])
    assert m, f["fix"]
    fixed = m.group(1).rstrip(",")
    req = tmp_path / "fixed.in"
    req.write_text(fixed + "\n")
    proc = subprocess.run(
        [uv_binary(), "pip", "compile", str(req), "--python-platform", "aarch64-manylinux_2_39",
         "--python-version", "3.12", "--no-deps", "--only-binary", ":all:", "--quiet"],
        capture_output=True, text=True, timeout=300,
    )  # fmt: skip
    assert proc.returncode == 0, proc.stderr
    again = _lock(run, tmp_path, fixed + "\n")
    assert not [g for g in again.json()["findings"] if "no wheel of it fits" in g["summary"]], again.out

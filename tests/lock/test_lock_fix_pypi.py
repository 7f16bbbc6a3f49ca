"""`sparkenv lock --fix` on real blocked inputs from the public index (uv's configured index), one per
CUDA family: each is turned into a ready lock for the Spark's default profile, with the diff shown and
the original untouched; FAISS, which has no CUDA 13 build on the index, is left blocked with the reason.
Each case was checked with `uv pip compile --python-platform aarch64-manylinux_2_39` before it was
written here: the CUDA 12 input does not lock, the fixed one does."""

from __future__ import annotations

import pytest

pytestmark = pytest.mark.network

FIXABLE = [
    # (family, the blocked input, the line --fix writes instead)
    ("cuFFT, a CUDA toolkit library", "nvidia-cufft-cu12==11.3.3.83", "nvidia-cufft>=12,<13"),
    ("NCCL", "nvidia-nccl-cu12==2.21.5", "nvidia-nccl-cu13>=2.27"),
    ("CuPy", "cupy-cuda12x", "cupy-cuda13x"),
    ("DALI, a -cudaNNN distribution", "nvidia-dali-cuda120", "nvidia-dali-cuda130"),
    ("ONNX Runtime, an old pin with no aarch64 wheel", "onnxruntime-gpu==1.18.0",
     "onnxruntime-gpu[cuda,cudnn]>=1.31.1"),
    ("JAX, a CUDA-major extra", "jax[cuda12]", "jax[cuda13]"),
]  # fmt: skip


def _lock(run, tmp_path, text: str, *args: str):
    req = tmp_path / "requirements.txt"
    req.write_text(text)
    env = {"UV_CACHE_DIR": str(tmp_path / "uv"), "SPARKENV_CACHE_DIR": str(tmp_path / "sparkenv-cache")}
    return run("lock", "requirements.txt", "--output-dir", "out", *args, env=env, cwd=tmp_path)


@pytest.mark.parametrize(("family", "blocked", "fixed"), FIXABLE, ids=[c[0].split(",")[0] for c in FIXABLE])
def test_lock_fix_turns_a_blocked_input_into_a_ready_lock(run, tmp_path, family, blocked, fixed):
    text = f"{blocked}  # {family}\n"
    r = _lock(run, tmp_path, text, "--fix")
    assert r.code == 0, r.out + r.err
    assert f"-{blocked}  # {family}\n+{fixed}  # {family}\n" in r.out  # the diff
    assert (tmp_path / "requirements.txt").read_text() == text
    assert (tmp_path / "requirements.fixed.txt").read_text() == f"{fixed}  # {family}\n"
    assert r.lines[-1] == "verdict: ready"
    assert (tmp_path / "out" / "pylock.ngc-25-11.toml").is_file()


def test_lock_fix_says_why_it_cannot_fix_faiss(run, tmp_path):
    text = "faiss-gpu-cu12\n"
    r = _lock(run, tmp_path, text, "--fix")
    assert r.code == 1, r.out + r.err
    assert "nothing written" in r.err
    line = r.line("G1", "faiss-gpu-cu12")
    assert "no known CUDA 13 build of faiss-gpu-cu12" in line and "build FAISS with CUDA 13" in line
    assert (tmp_path / "requirements.txt").read_text() == text
    assert not (tmp_path / "requirements.fixed.txt").exists() and not (tmp_path / "out").exists()

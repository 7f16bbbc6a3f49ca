"""A fix is tried before it is printed, and `sparkenv lock --fix` writes only what locks ready: real
wheels on a loopback index, the real `uv pip compile` behind the real CLI.

- speechy 2.0 has x86_64 wheels only, 1.2 has an aarch64 one: the proposed pin re-resolves, so the fix
  line prints it as a fix that was tried.
- nvidia-nccl-cu12's CUDA 13 counterpart (nvidia-nccl-cu13, from sparkenv's data) is on this index with
  an x86_64 wheel only: the re-resolve fails, and the line says what was tried and why it fails.
- Both in one file under --fix: the speechy fix works alone, but the fixed inputs still block on NCCL, so
  every file is put back and no lock is written (never partial)."""

from __future__ import annotations

import json

import pytest
from artifacts import Index, serve

ARM, X86 = "cp312-cp312-manylinux_2_28_aarch64", "cp312-cp312-manylinux_2_28_x86_64"


@pytest.fixture(scope="module")
def index(tmp_path_factory: pytest.TempPathFactory):
    ix = Index(tmp_path_factory.mktemp("index"))
    ix.wheel("speechy", "2.0", tag=X86)
    ix.wheel("speechy", "1.2", tag=ARM)
    ix.wheel("speechy", "1.2", tag=X86)
    ix.wheel("usesspeechy", "1.0", requires=["speechy>=2"])
    ix.wheel("usesspeechy", "1.1", requires=["speechy>=1"])
    ix.wheel("nvidia-nccl-cu12", "2.21.5", tag="py3-none-manylinux_2_17_aarch64")
    ix.wheel("nvidia-nccl-cu13", "2.28.3", tag="py3-none-manylinux_2_17_x86_64")
    server = serve(ix)
    yield ix
    server.shutdown()


@pytest.fixture
def lock(run, index, tmp_path):
    env = {"UV_CACHE_DIR": str(tmp_path / "uv"), "SPARKENV_CACHE_DIR": str(tmp_path / "sparkenv-cache")}

    def _lock(*args: str):
        out = tmp_path / "out"
        return run("lock", *args, "--index-url", index.url, "--output-dir", str(out), env=env, cwd=tmp_path)

    return _lock


def _req(tmp_path, text: str):
    req = tmp_path / "requirements.txt"
    req.write_text(text)
    return req


def test_a_fix_that_re_resolves_is_printed_as_a_fix(lock, tmp_path):
    _req(tmp_path, "speechy==2.0\n")
    r = lock("requirements.txt", "--json")
    assert r.code == 1, r.out + r.err
    (f,) = [f for f in r.json()["findings"] if f["subject"] == "speechy" and f["status"] == "FAIL"]
    assert f["fix"].startswith("require speechy==1.2, the nearest release with a wheel for aarch64")
    assert "tried: it re-resolves for aarch64-manylinux_2_39 with no FAIL left on speechy" in f["fix"]
    assert not (tmp_path / "out").exists() or not list((tmp_path / "out").glob("pylock*"))


def test_a_leaf_is_fixed_at_the_requirement_the_user_wrote(lock, tmp_path):
    # speechy>=2 comes from usesspeechy 1.0: no aarch64 wheel; usesspeechy 1.1 accepts speechy 1.2
    _req(tmp_path, "usesspeechy==1.0\n")
    r = lock("requirements.txt", "--fix")
    assert r.code == 0, r.out + r.err
    assert "-usesspeechy==1.0\n+usesspeechy\n" in r.out  # the root changed, not the leaf it pulls in
    assert "speechy==" not in (tmp_path / "requirements.fixed.txt").read_text()
    pylock = (tmp_path / "out" / "pylock.ngc-25-11.toml").read_text()
    assert 'name = "usesspeechy"\nversion = "1.1"' in pylock and 'name = "speechy"\nversion = "1.2"' in pylock


def test_a_fix_whose_re_resolve_fails_says_what_was_tried_and_why(lock, tmp_path):
    _req(tmp_path, "nvidia-nccl-cu12==2.21.5\n")
    r = lock("requirements.txt")
    assert r.code == 1, r.out + r.err
    line = r.line("G1", "nvidia-nccl-cu12")
    fix = line.split("target is CUDA 13; ", 1)[1]
    assert fix.startswith("tried: write nvidia-nccl-cu13>=2.27 instead of nvidia-nccl-cu12"), line
    # the counterpart's only wheel is for x86_64: the re-resolve's own finding is the reason
    assert "fails because G1 FAIL: nvidia-nccl-cu13 2.28.3" in fix and "no wheel of it fits" in fix
    assert "re-resolves" not in fix


def test_fix_that_still_blocks_leaves_every_file_as_it_was(lock, tmp_path):
    text = "speechy==2.0  # the model's speech engine\nnvidia-nccl-cu12==2.21.5\n"
    req = _req(tmp_path, text)
    r = lock("requirements.txt", "--fix")
    assert r.code == 1, r.out + r.err
    assert req.read_text() == text
    assert not (tmp_path / "requirements.fixed.txt").exists()
    assert not (tmp_path / "out").exists() or not list((tmp_path / "out").glob("pylock*"))
    assert "every file was put back, nothing written" in r.err
    # the fixed inputs' verdict is the one shown: NCCL still blocks, speechy no longer does
    assert r.lines[-1].startswith("verdict: blocked")
    assert r.line("G1", "nvidia-nccl-cu12").startswith("G1 FAIL")
    assert not any(ln.startswith("G1 FAIL: speechy") for ln in r.lines)


def test_fix_writes_beside_shows_the_diff_and_locks(lock, tmp_path):
    text = "speechy==2.0  # the model's speech engine\n"
    req = _req(tmp_path, text)
    r = lock("requirements.txt", "--fix")
    assert r.code == 0, r.out + r.err
    assert req.read_text() == text  # the original untouched
    fixed = tmp_path / "requirements.fixed.txt"
    assert fixed.read_text() == "speechy==1.2  # the model's speech engine\n"
    assert "--- requirements.txt\n+++ requirements.fixed.txt\n" in r.out
    assert "-speechy==2.0  # the model's speech engine" in r.out
    assert "+speechy==1.2  # the model's speech engine" in r.out
    assert r.lines[-1] == "verdict: ready"
    pylock = (tmp_path / "out" / "pylock.ngc-25-11.toml").read_text()
    assert 'name = "speechy"' in pylock and 'version = "1.2"' in pylock
    assert "requirements.fixed.txt" in pylock  # the lock names the inputs it was made from
    assert lock("requirements.fixed.txt", "--check").code == 0


def test_fix_write_changes_the_input_in_place(lock, tmp_path):
    req = _req(tmp_path, "# speech\nspeechy==2.0 ; python_version >= '3.10'\n")
    r = lock("requirements.txt", "--fix", "--write", "--json")
    assert r.code == 0, r.out + r.err
    assert req.read_text() == '# speech\nspeechy==1.2 ; python_version >= "3.10"\n'
    assert not (tmp_path / "requirements.fixed.txt").exists()
    assert json.loads(r.out)["verdict"] == "ready"  # the diff went to stderr: stdout is the JSON alone
    assert "+speechy==1.2" in r.err
    assert lock("requirements.txt", "--check").code == 0


def test_write_without_fix_is_bad_usage(lock, tmp_path):
    _req(tmp_path, "speechy==1.2\n")
    r = lock("requirements.txt", "--write")
    assert r.code == 2 and "--write: only with --fix" in r.err

"""`sparkenv audit --fix-plan` on a real venv made by uv, filled from a loopback index of locally built
wheels: the plan never uninstalls what another installed distribution requires unconditionally, and
prints only commands uv's dry run accepted — run for real afterwards, they leave the venv consistent.

The venv holds nvidia-cufft-cu12 (nothing requires it; its CUDA 13 counterpart nvidia-cufft 12.x is on
the index), nvidia-cublas-cu12 (cublas-user requires it on every platform) and nvidia-nccl-cu12 (its
counterpart is not on this index: the install's dry run refuses it)."""

from __future__ import annotations

import json
import os
import shlex
import subprocess
import sys
from pathlib import Path

import pytest
from artifacts import Index, serve

TAG = "py3-none-any"


@pytest.fixture(scope="module")
def index(tmp_path_factory: pytest.TempPathFactory):
    ix = Index(tmp_path_factory.mktemp("index"))
    ix.wheel("nvidia-cufft-cu12", "11.3.3.83", tag=TAG)
    ix.wheel("nvidia-cufft", "12.0.0.15", tag=TAG)
    ix.wheel("nvidia-cublas-cu12", "12.8.4.1", tag=TAG)
    ix.wheel("nvidia-nccl-cu12", "2.27.3", tag=TAG)
    ix.wheel("cublas-user", "1.0", tag=TAG, requires=["nvidia-cublas-cu12>=12"])
    server = serve(ix)
    yield ix
    server.shutdown()


def _uv() -> str:
    import uv

    return str(uv.find_uv_bin())


def test_fix_plan_keeps_what_is_required_and_prints_only_dry_run_commands(index, tmp_path: Path) -> None:
    env = {k: v for k, v in os.environ.items() if k != "VIRTUAL_ENV"}
    env.update(
        UV_INDEX_URL=index.url, UV_CACHE_DIR=str(tmp_path / "uv"), SPARKENV_CACHE_DIR=str(tmp_path / "c")
    )
    venv = tmp_path / "venv"
    subprocess.run(
        [_uv(), "venv", "-q", "--python", sys.executable, str(venv)], check=True, timeout=300, env=env
    )
    python = venv / "bin" / "python"
    subprocess.run(
        [_uv(), "pip", "install", "-q", "--python", str(python), "nvidia-cufft-cu12", "cublas-user",
         "nvidia-nccl-cu12"],
        check=True, timeout=300, env=env,
    )  # fmt: skip
    proc = subprocess.run(
        [sys.executable, "-m", "sparkenv", "audit", str(venv), "--gpu", "none", "--fix-plan", "--json"],
        capture_output=True, text=True, timeout=300, env=env,
    )  # fmt: skip
    assert proc.returncode in (0, 1), proc.stderr
    report = json.loads(proc.stdout)
    plan = report["context"]["fix_plan"]
    commands = plan["commands"]
    # the counterpart installed, the CUDA 12 build removed; nothing else
    argvs = [shlex.split(c) for c in commands]
    assert all(a[3] == "--python" and a[4].startswith(f"{venv}/bin/python") for a in argvs), (
        plan
    )  # the venv's own interpreter
    assert [a[:3] + a[5:] for a in argvs] == [
        ["uv", "pip", "install", "nvidia-cufft>=12,<13"],
        ["uv", "pip", "uninstall", "nvidia-cufft-cu12"],
    ], plan
    assert not any("nvidia-cublas-cu12" in c for c in commands)  # cublas-user needs it
    held = [n for n in plan["not_planned"] if n.startswith("pip uninstall nvidia-cublas-cu12")]
    assert (
        held
        and "cublas-user 1.0 (Requires-Dist: nvidia-cublas-cu12>=12) requires it unconditionally" in held[0]
    )
    assert "upgrade cublas-user" in held[0]
    refused = [n for n in plan["not_planned"] if "nvidia-nccl-cu13" in n]
    assert refused and "the dry run refused it" in refused[0], plan
    assert "fix plan for" in proc.stderr  # under --json the plan's text goes to stderr
    # run the plan as printed: the venv stays consistent, cuFFT is the CUDA 13 one
    for argv in argvs:
        subprocess.run([_uv(), *argv[1:]], check=True, timeout=300, env=env, capture_output=True)
    check = subprocess.run([_uv(), "pip", "check", "--python", str(python)], capture_output=True, text=True,
                           timeout=120, env=env)  # fmt: skip
    assert check.returncode == 0, check.stdout + check.stderr
    listed = subprocess.run(
        [_uv(), "pip", "list", "--python", str(python), "--format", "json"],
        capture_output=True, text=True, timeout=120, env=env, check=True,
    ).stdout  # fmt: skip
    names = {p["name"] for p in json.loads(listed)}
    assert "nvidia-cufft" in names and "nvidia-cufft-cu12" not in names and "nvidia-cublas-cu12" in names

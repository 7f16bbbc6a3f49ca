"""The gate judges the interpreter the workload runs, not sparkenv's own: sparkenv installed apart from
the training venv (here: this test venv, without torch) in front of a workload whose argv[0] is the
torch venv's python, or a script whose shebang names it (torchrun, the real one pip installed there).
Every report says which interpreter it judged; --python still overrides. Real processes, the real
CPU-torch venv .ci/run provisions (SPARKENV_TEST_TORCH_PYTHON)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import multinode_helpers as mh
import pytest

pytestmark = pytest.mark.torch


@pytest.fixture(scope="module")
def torch_python() -> str:
    python = mh.torch_python()
    if python == sys.executable:
        pytest.skip("this venv has torch itself: the test needs sparkenv apart from the torch venv")
    return python


def _gate(*args: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "SPARKENV_GATE": "warn", "SPARKENV_CACHE_DIR": str(cwd / "cache")}
    return subprocess.run(
        [sys.executable, "-m", "sparkenv", "gate", *args],
        cwd=cwd,
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
    )


def _g1(report: dict) -> list[str]:  # type: ignore[type-arg]
    return [f"{f['status']}: {f['summary']}" for f in report["findings"] if f["id"] == "G1"]


def test_the_workloads_python_is_judged_and_named(torch_python: str, tmp_path: Path) -> None:
    assert subprocess.run([sys.executable, "-c", "import torch"], capture_output=True).returncode != 0
    r = _gate("--report", "r.json", "--", torch_python, "-c", "print('workload ran')", cwd=tmp_path)
    assert r.returncode == 0 and "workload ran" in r.stdout, r.stdout + r.stderr
    report = json.loads((tmp_path / "r.json").read_text())
    assert report["context"]["interpreter"] == f"{torch_python} (the workload's argv[0])"
    assert f"interpreter: {torch_python} (the workload's argv[0])" in r.stderr
    assert not any("torch is not installed" in line for line in _g1(report)), _g1(report)


def test_a_script_is_judged_by_its_shebang(torch_python: str, tmp_path: Path) -> None:
    torchrun = Path(torch_python).parent / "torchrun"
    assert torchrun.read_bytes().startswith(b"#!")
    env_path = f"{torchrun.parent}{os.pathsep}{os.environ['PATH']}"
    r = subprocess.run(
        [sys.executable, "-m", "sparkenv", "gate", "--report", "r.json", "--", "torchrun", "--help"],
        cwd=tmp_path,
        env={**os.environ, "PATH": env_path, "SPARKENV_GATE": "warn"},
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert r.returncode == 0 and "usage: torchrun" in r.stdout, r.stdout[-2000:] + r.stderr[-2000:]
    report = json.loads((tmp_path / "r.json").read_text())
    assert report["context"]["interpreter"].endswith(f"(the shebang of {torchrun})")
    assert not any("torch is not installed" in line for line in _g1(report)), _g1(report)


def test_python_still_overrides(torch_python: str, tmp_path: Path) -> None:
    r = _gate(
        "--report", "r.json", "--python", sys.executable, "--", torch_python, "-c", "pass", cwd=tmp_path
    )
    assert r.returncode == 0, r.stdout + r.stderr
    report = json.loads((tmp_path / "r.json").read_text())
    assert report["context"]["interpreter"] == f"{sys.executable} (--python)"
    assert any("torch is not installed" in line for line in _g1(report)), _g1(report)

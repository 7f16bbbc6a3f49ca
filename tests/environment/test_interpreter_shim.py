"""An interpreter argument is resolved as uv resolves one: a bare name on PATH, and a pyenv-style shim (a
shell script on PATH that execs the real interpreter) asked for its real sys.executable — for the audit's
TARGET, the gate's --python and the gate's own discovery of the workload's Python. Real shim scripts on a
temporary PATH, real processes.

Before: `sparkenv audit python3` was "no such file" (exit 2), `sparkenv audit "$(command -v python3)"` on a
pyenv machine "no site-packages folder found … under ~/.pyenv" (exit 2), and the gate gave two ERROR lines
(G1, G8) for the shim, with --python or as the workload's argv[0]."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest


@pytest.fixture
def shims(tmp_path: Path) -> Path:
    """A folder holding `python3` as pyenv's shims are: a bash script that execs the real interpreter."""
    folder = tmp_path / "shims"
    folder.mkdir()
    shim = folder / "python3"
    shim.write_text(f'#!/usr/bin/env bash\nset -e\nexec "{sys.executable}" "$@"\n')
    shim.chmod(0o755)
    return folder


def _sparkenv(*args: str, path_first: Path, cwd: Path) -> subprocess.CompletedProcess[str]:
    env = {
        **os.environ,
        "PATH": f"{path_first}{os.pathsep}{os.environ['PATH']}",
        "SPARKENV_GATE": "warn",
        "SPARKENV_CACHE_DIR": str(cwd / "cache"),
    }
    env.pop("VIRTUAL_ENV", None)
    return subprocess.run(
        [sys.executable, "-m", "sparkenv", *args],
        cwd=cwd,
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
    )


@pytest.mark.parametrize("how", ["name", "shim path"])
def test_the_audit_reads_the_interpreter_a_shim_runs(shims: Path, tmp_path: Path, how: str) -> None:
    target = "python3" if how == "name" else str(shims / "python3")
    r = _sparkenv("audit", target, "--json", "--gpu", "none", path_first=shims, cwd=tmp_path)
    assert r.returncode in (0, 1), r.stderr
    report = json.loads(r.stdout)
    assert report["target"] == f"{target} ({sys.executable})"
    # the real interpreter's packages were read: sparkenv's own dependencies are installed there
    assert any(f["id"] == "G9" and "requirement" in f["summary"] for f in report["findings"]), report


@pytest.mark.parametrize("how", ["name", "shim path"])
def test_the_gate_judges_the_interpreter_a_shim_runs(shims: Path, tmp_path: Path, how: str) -> None:
    python = "python3" if how == "name" else str(shims / "python3")
    r = _sparkenv("gate", "--python", python, "--report", "r.json", path_first=shims, cwd=tmp_path)
    assert r.returncode == 0, r.stderr
    assert f"interpreter: {sys.executable} (--python)" in r.stdout + r.stderr
    report = json.loads((tmp_path / "r.json").read_text())
    assert [f for f in report["findings"] if f["status"] == "ERROR"] == []


def test_the_gates_discovery_asks_the_workloads_shim(shims: Path, tmp_path: Path) -> None:
    r = _sparkenv(
        "gate",
        "--report",
        "r.json",
        "--",
        "python3",
        "-c",
        "print('workload ran')",
        path_first=shims,
        cwd=tmp_path,
    )
    assert r.returncode == 0 and "workload ran" in r.stdout, r.stderr
    report = json.loads((tmp_path / "r.json").read_text())
    assert report["context"]["interpreter"].startswith(f"{sys.executable} (the workload's argv[0]")
    assert [f for f in report["findings"] if f["status"] == "ERROR"] == []


def test_a_shim_without_an_interpreter_is_one_line_exit_2(tmp_path: Path) -> None:
    folder = tmp_path / "shims"
    folder.mkdir()
    shim = folder / "python3"  # what a pyenv shim says when its version is not installed
    shim.write_text('#!/usr/bin/env bash\necho "pyenv: python3: command not found" >&2\nexit 127\n')
    shim.chmod(0o755)
    for args in (["audit", "python3"], ["gate", "--python", "python3"]):
        r = _sparkenv(*args, path_first=folder, cwd=tmp_path)
        assert r.returncode == 2, r.stderr
        lines = r.stderr.strip().splitlines()
        assert len(lines) == 1 and "pyenv: python3: command not found" in lines[0], lines
        assert "Traceback" not in r.stderr


def test_a_name_on_no_path_is_one_line_exit_2(tmp_path: Path) -> None:
    r = _sparkenv("audit", "python3.99", path_first=tmp_path, cwd=tmp_path)
    assert r.returncode == 2 and "no python3.99 on PATH" in r.stderr, r.stderr

"""`lock --check` from a subfolder of the project: every path a finding names — the stale lock, the inputs
that changed, the fix's command line — is relative to where the user stands, so each one opens and the fix
runs as printed. Before: the inputs in the summary were relative to the lock's folder (inputs/x.txt) while
the fix's were relative to the working folder (../../lockfiles/inputs/x.txt). Real CLI runs on a stale copy
of the shipped lock."""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]


def _project(tmp_path: Path) -> Path:
    proj = tmp_path / "proj"
    (proj / "lockfiles" / "inputs").mkdir(parents=True)
    (proj / ".git").mkdir()
    for name in ("pylock.ngc-25-11.toml", "requirements.ngc-25-11.txt", "inputs/playbook-unsloth.txt"):
        shutil.copy(REPO / "lockfiles" / name, proj / "lockfiles" / name)
    return proj


def _check(cwd: Path) -> dict:  # type: ignore[type-arg]
    r = subprocess.run(
        [sys.executable, "-m", "sparkenv", "lock", "--check", "--json"],
        cwd=cwd,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert r.returncode == 1, r.stderr
    return json.loads(r.stdout)


def test_a_stale_lock_names_every_path_from_where_the_user_stands(tmp_path: Path) -> None:
    proj = _project(tmp_path)
    with (proj / "lockfiles" / "inputs" / "playbook-unsloth.txt").open("a") as fh:
        fh.write("einops\n")
    here = proj / "sub" / "deeper"
    here.mkdir(parents=True)
    (finding,) = _check(here)["findings"]
    changed = re.search(r"inputs changed since the lock \(([^)]*)\)", finding["summary"])
    assert changed, finding["summary"]
    assert changed.group(1) == "../../lockfiles/inputs/playbook-unsloth.txt"
    fix = finding["fix"].removeprefix("run ").split()
    assert fix[:2] == ["sparkenv", "lock"] and fix[2] == changed.group(1), fix
    assert fix[fix.index("--output-dir") + 1] == "../../lockfiles"
    for path in (finding["subject"], changed.group(1), fix[fix.index("--output-dir") + 1]):
        assert os.path.exists(here / path), path


def test_a_missing_input_is_named_from_where_the_user_stands(tmp_path: Path) -> None:
    proj = _project(tmp_path)
    (proj / "lockfiles" / "inputs" / "playbook-unsloth.txt").unlink()
    here = proj / "sub"
    here.mkdir()
    (finding,) = _check(here)["findings"]
    assert finding["summary"] == (
        "../lockfiles/pylock.ngc-25-11.toml records input ../lockfiles/inputs/playbook-unsloth.txt, which no "
        "longer exists"
    )

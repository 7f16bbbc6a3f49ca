"""The code base stays ruff clean (the project's standard), checked with the tests so CI enforces it."""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def test_ruff_check_and_format():
    ruff = shutil.which("ruff") or str(Path(sys.executable).parent / "ruff")
    for args in (["check", "."], ["format", "--check", "."]):
        proc = subprocess.run([ruff, *args], cwd=ROOT, capture_output=True, text=True, timeout=120)
        assert proc.returncode == 0, proc.stdout + proc.stderr

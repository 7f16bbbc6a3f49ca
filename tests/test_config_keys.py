"""Unknown [tool.sparkenv] keys: a typo (`profil =`) silently targeted the default profile. Now a warning
names the key and the closest known one (difflib), once; `sparkenv --strict-config` (or
SPARKENV_STRICT_CONFIG=1) refuses it with one line, exit 2. Real processes, offline `check`."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

PYPROJECT = (
    '[project]\nname = "x"\nversion = "1"\ndependencies = []\n\n[tool.sparkenv]\n{key} = "ngc-25.11"\n'
)


def _check(folder: Path, *before: str, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    base = {k: v for k, v in os.environ.items() if k != "SPARKENV_STRICT_CONFIG"}
    return subprocess.run(
        [sys.executable, "-m", "sparkenv", *before, "check", "pyproject.toml"],
        cwd=folder,
        env={**base, "SPARKENV_CACHE_DIR": str(folder / "cache"), **(env or {})},
        capture_output=True,
        text=True,
        timeout=120,
    )


def test_a_misspelt_key_is_a_warning_naming_the_closest_known_one(tmp_path: Path) -> None:
    (tmp_path / "pyproject.toml").write_text(PYPROJECT.format(key="profil"))
    r = _check(tmp_path)
    assert r.returncode == 0, r.stderr
    warnings = [line for line in r.stderr.splitlines() if "unknown key" in line]
    assert warnings == [
        "sparkenv: warning: pyproject.toml: [tool.sparkenv] unknown key `profil` (did you mean `profile`?); "
        "ignored"
    ]


def test_a_key_like_none_lists_the_known_ones(tmp_path: Path) -> None:
    (tmp_path / "pyproject.toml").write_text(PYPROJECT.format(key="zzz"))
    r = _check(tmp_path)
    assert "unknown key `zzz` (known keys: profile, profile-file," in r.stderr, r.stderr


def test_known_keys_say_nothing(tmp_path: Path) -> None:
    (tmp_path / "pyproject.toml").write_text(PYPROJECT.format(key="profile"))
    r = _check(tmp_path)
    assert r.returncode == 0 and "unknown key" not in r.stderr, r.stderr


@pytest.mark.parametrize("how", ["option", "environment"])
def test_strict_config_refuses_it_with_one_line(tmp_path: Path, how: str) -> None:
    (tmp_path / "pyproject.toml").write_text(PYPROJECT.format(key="profil"))
    if how == "option":
        r = _check(tmp_path, "--strict-config")
    else:
        r = _check(tmp_path, env={"SPARKENV_STRICT_CONFIG": "1"})
    assert r.returncode == 2, r.stdout + r.stderr
    assert r.stderr.strip().splitlines() == [
        "sparkenv: error: pyproject.toml: [tool.sparkenv] unknown key `profil` (did you mean `profile`?); "
        "refused under --strict-config"
    ]
    assert r.stdout == ""

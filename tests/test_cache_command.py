"""`sparkenv cache dir|clean` and the cache folder documented in --help. Real CLI processes; the folder
filled by a real audit (its kept answers) before it is emptied."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path


def _sparkenv(*args: str, env: dict[str, str], cwd: Path) -> subprocess.CompletedProcess[str]:
    base = {k: v for k, v in os.environ.items() if k not in ("SPARKENV_CACHE_DIR", "XDG_CACHE_HOME")}
    return subprocess.run(
        [sys.executable, "-m", "sparkenv", *args],
        env={**base, **env},
        cwd=cwd,
        capture_output=True,
        text=True,
        timeout=300,
    )


def test_cache_dir_names_the_folder_each_setting_gives(tmp_path: Path) -> None:
    given = _sparkenv("cache", "dir", env={"SPARKENV_CACHE_DIR": str(tmp_path / "c")}, cwd=tmp_path)
    assert (given.returncode, given.stdout) == (0, f"{tmp_path / 'c'}\n")
    xdg = _sparkenv("cache", "dir", env={"XDG_CACHE_HOME": str(tmp_path / "x")}, cwd=tmp_path)
    assert xdg.stdout == f"{tmp_path / 'x' / 'sparkenv'}\n"
    home = _sparkenv("cache", "dir", env={"HOME": str(tmp_path / "h")}, cwd=tmp_path)
    assert home.stdout == f"{tmp_path / 'h' / '.cache' / 'sparkenv'}\n"
    assert not (tmp_path / "c").exists()  # saying where is not making it


def test_clean_empties_what_an_audit_kept(tmp_path: Path) -> None:
    folder = tmp_path / "kept"
    env = {"SPARKENV_CACHE_DIR": str(folder)}
    audited = _sparkenv("audit", "--json", env=env, cwd=tmp_path)
    assert audited.returncode in (0, 1), audited.stderr
    kept = [p for p in folder.rglob("*") if p.is_file() and p.name != "CACHEDIR.TAG"]
    assert kept, "the audit kept nothing to clean"
    assert (folder / "CACHEDIR.TAG").read_text().startswith("Signature: 8a477f597d28d172789f06886806bc55")
    r = _sparkenv("cache", "clean", env=env, cwd=tmp_path)
    assert r.returncode == 0, r.stderr
    assert r.stdout.startswith(f"sparkenv cache: removed {len(kept)} file(s), ")
    assert [p.name for p in folder.iterdir()] == ["CACHEDIR.TAG"]
    again = _sparkenv("audit", "--json", env=env, cwd=tmp_path)  # and the next run fills it again
    assert again.returncode == audited.returncode, again.stderr


def test_clean_refuses_a_folder_sparkenv_did_not_make(tmp_path: Path) -> None:
    mine = tmp_path / "home-by-mistake"
    mine.mkdir()
    (mine / "thesis.tex").write_text("years of work\n")
    r = _sparkenv("cache", "clean", env={"SPARKENV_CACHE_DIR": str(mine)}, cwd=tmp_path)
    assert r.returncode == 2 and "not a cache folder sparkenv made" in r.stderr, r.stderr
    assert len(r.stderr.strip().splitlines()) == 1
    assert (mine / "thesis.tex").read_text() == "years of work\n"


def test_help_says_where_the_cache_is(tmp_path: Path) -> None:
    r = _sparkenv("--help", env={}, cwd=tmp_path)
    text = " ".join(r.stdout.split())
    assert "$SPARKENV_CACHE_DIR, else $XDG_CACHE_HOME/sparkenv, else ~/.cache/sparkenv" in text
    assert "sparkenv cache dir|clean" in text

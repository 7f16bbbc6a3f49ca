"""One project model: in a real git repository with a custom profile file, `lock` from a subfolder writes
to the project root's lockfiles/, `lock --check` and `build` find the profile the lock records from
anywhere in the project and notice when its content changed, and the stale lock's printed fix runs as
printed from where the user stands. A local index over loopback HTTP; the real uv."""

from __future__ import annotations

import json
import os
import shlex
import subprocess
import sys
from pathlib import Path

import pytest
from artifacts import Index, serve

from sparkenv.environment import profiles


@pytest.fixture(scope="module")
def index(tmp_path_factory: pytest.TempPathFactory):  # type: ignore[no-untyped-def]
    ix = Index(tmp_path_factory.mktemp("index"))
    ix.wheel("numpy", "2.1.0", tag="cp312-cp312-manylinux_2_17_aarch64")
    ix.wheel("peft", "0.19.1", requires=["numpy"])
    server = serve(ix)
    yield ix
    server.shutdown()


def _run(cwd: Path, *args: str, env: dict[str, str]) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "sparkenv", *args],
        cwd=cwd,
        env={**os.environ, **env},
        capture_output=True,
        text=True,
        timeout=300,
    )


@pytest.fixture
def repo(tmp_path: Path) -> Path:
    """A git repository with requirements.txt and a custom profile (as `profiles new` writes one)."""
    root = tmp_path / "repo"
    (root / "sub" / "deeper").mkdir(parents=True)
    subprocess.run(["git", "init", "-q", str(root)], check=True)
    (root / "requirements.txt").write_text("peft\n")
    source = Path(profiles.__file__).parents[1] / "data" / "profiles" / "ngc-25.11.toml"
    (root / "standin.toml").write_text(source.read_text().replace('name = "ngc-25.11"', 'name = "standin"'))
    return root


def test_a_custom_profile_lock_is_checked_and_built_from_anywhere_in_the_project(
    repo, index, tmp_path
) -> None:  # type: ignore[no-untyped-def]
    env = {"UV_CACHE_DIR": str(tmp_path / "uv"), "SPARKENV_CACHE_DIR": str(tmp_path / "sc")}
    sub = repo / "sub" / "deeper"
    r = _run(
        sub,
        "lock",
        "../../requirements.txt",
        "--profile",
        "../../standin.toml",
        "--index-url",
        index.url,
        env=env,
    )
    assert r.returncode == 0, r.stdout + r.stderr
    # the project root's lockfiles/, as uv finds the project; not sub/deeper/lockfiles/
    pylock = repo / "lockfiles" / "pylock.standin.toml"
    assert pylock.is_file() and not (sub / "lockfiles").exists()
    assert "wrote ../../lockfiles/pylock.standin.toml" in r.stdout  # said as seen from here
    assert 'profile-file = "standin.toml"' in pylock.read_text()

    for where in (repo, repo / "sub", sub):
        r = _run(where, "lock", "--check", env=env)
        assert r.returncode == 0 and "is current" in r.stdout, (where, r.stdout + r.stderr)
    build = ["build", "--dry-run", "--lock", "../../lockfiles/pylock.standin.toml", "--tag", "x/y:1"]
    r = _run(sub, *build, env=env)  # the profile file the lock records, found from here
    assert r.returncode == 0 and "FROM nvcr.io/nvidia/pytorch:25.11-py3" in r.stdout, r.stdout + r.stderr

    # the profile changes: every command notices
    profile = repo / "standin.toml"
    profile.write_text(profile.read_text().replace('python = "3.12.3"', 'python = "3.12.9"'))
    r = _run(sub, "lock", "--check", "--format", "json", env=env)
    assert r.returncode == 1, r.stdout + r.stderr
    stale = next(f for f in json.loads(r.stdout)["findings"] if f["status"] == "FAIL")
    assert "profile standin changed" in stale["summary"]
    r = _run(sub, *build, env=env)
    assert r.returncode == 2 and "changed since the lock" in r.stderr, r.stdout + r.stderr

    # the printed fix, run exactly as printed from where the user stands, makes the lock current again
    fix = stale["fix"].removeprefix("run ")
    argv = shlex.split(fix)
    assert argv[:2] == ["sparkenv", "lock"]
    r = _run(sub, *argv[1:], "--index-url", index.url, env=env)
    assert r.returncode == 0, (fix, r.stdout + r.stderr)
    r = _run(sub, "lock", "--check", env=env)
    assert r.returncode == 0, r.stdout + r.stderr


def test_a_lock_of_an_unnamed_custom_profile_says_how_to_recover(repo, index, tmp_path) -> None:  # type: ignore[no-untyped-def]
    """A lock that names a custom profile but no file (written before locks recorded the file): exit 2
    naming the lock and what to do, never a bare 'unknown profile'."""
    env = {"UV_CACHE_DIR": str(tmp_path / "uv"), "SPARKENV_CACHE_DIR": str(tmp_path / "sc")}
    r = _run(repo, "lock", "requirements.txt", "--profile", "standin.toml", "--index-url", index.url, env=env)
    assert r.returncode == 0, r.stdout + r.stderr
    pylock = repo / "lockfiles" / "pylock.standin.toml"
    pylock.write_text(
        "\n".join(ln for ln in pylock.read_text().splitlines() if "profile-file" not in ln) + "\n"
    )
    r = _run(repo, "lock", "--check", env=env)
    assert r.returncode == 2 and "lockfiles/pylock.standin.toml" in r.stderr and "--profile FILE" in r.stderr


def test_the_project_roots_profile_is_the_target_of_a_requirements_file(repo, index, tmp_path) -> None:  # type: ignore[no-untyped-def]
    """`[tool.sparkenv] profile` in the project root's pyproject.toml: check and lock of a requirements
    file, from a subfolder, target it; --profile still wins."""
    env = {"UV_CACHE_DIR": str(tmp_path / "uv"), "SPARKENV_CACHE_DIR": str(tmp_path / "sc")}
    (repo / "pyproject.toml").write_text('[tool.sparkenv]\nprofile = "standin.toml"\n')
    sub = repo / "sub" / "deeper"
    r = _run(sub, "check", "../../requirements.txt", "--json", env=env)
    assert r.returncode == 0 and json.loads(r.stdout)["profile"] == "standin", r.stdout + r.stderr
    r = _run(sub, "check", "../../requirements.txt", "--json", "--profile", "ngc-25.11", env=env)
    assert json.loads(r.stdout)["profile"] == "ngc-25.11"
    r = _run(sub, "lock", "../../requirements.txt", "--index-url", index.url, env=env)
    assert r.returncode == 0 and (repo / "lockfiles" / "pylock.standin.toml").is_file(), r.stdout + r.stderr
    (repo / "pyproject.toml").write_text("[tool.sparkenv]\nprofile = 3\n")
    r = _run(sub, "check", "../../requirements.txt", env=env)
    assert r.returncode == 2 and "pyproject.toml" in r.stderr and r.stderr.count("\n") == 1, r.stderr

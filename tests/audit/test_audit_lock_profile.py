"""`audit --lock` finds the lock's profile as `lock --check` and `build` do (the project's profile file the
lock records, from anywhere in the project) and notices when its content changed since the lock, cache or
no cache. A real git repository, a real `sparkenv lock` with the real uv against a local index over
loopback HTTP, a real environment on disk."""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import pytest
from artifacts import Index, serve

from sparkenv.environment import profiles


@pytest.fixture(scope="module")
def index(tmp_path_factory: pytest.TempPathFactory):  # type: ignore[no-untyped-def]
    ix = Index(tmp_path_factory.mktemp("index"))
    ix.wheel("peft", "0.19.1")
    server = serve(ix)
    yield ix
    server.shutdown()


def _profile_finding(result) -> dict:  # type: ignore[no-untyped-def]
    (found,) = [f for f in result.json()["findings"] if f["subject"] == "profile"]
    return found


def test_audit_lock_finds_the_locks_profile_and_notices_a_change(env, run, index, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    repo = tmp_path / "repo"
    sub = repo / "sub"
    sub.mkdir(parents=True)
    subprocess.run(["git", "init", "-q", str(repo)], check=True, timeout=60)
    (repo / "requirements.txt").write_text("peft\n")
    shipped = Path(profiles.__file__).parents[1] / "data" / "profiles" / "ngc-25.11.toml"
    profile = repo / "standin.toml"
    profile.write_text(shipped.read_text().replace('name = "ngc-25.11"', 'name = "standin"'))
    cache = {"SPARKENV_CACHE_DIR": str(tmp_path / "cache"), "UV_CACHE_DIR": str(tmp_path / "uv")}
    locked = run(
        "lock", "requirements.txt", "--profile", "standin.toml", "--index-url", index.url, env=cache, cwd=repo
    )
    assert locked.code == 0, locked.out + locked.err
    env.add("peft", "0.19.1")
    audit = ("audit", str(env.prefix), "--lock", "../lockfiles/pylock.standin.toml", "--format", "json")

    same = _profile_finding(run(*audit, env=cache, cwd=sub))  # from a subfolder: the file the lock records
    assert same["id"] == "G9" and same["status"] == "PASS", same
    assert (
        same["summary"]
        == "../lockfiles/pylock.standin.toml was locked for profile ../standin.toml, unchanged since"
    )

    # the profile changes after the lock: noticed, the audit's cache notwithstanding
    profile.write_text(profile.read_text().replace('python = "3.12.3"', 'python = "3.12.9"'))
    changed = _profile_finding(run(*audit, env=cache, cwd=sub))
    assert changed["status"] == "WARN", changed
    assert changed["summary"].startswith(
        "profile ../standin.toml changed since ../lockfiles/pylock.standin.toml"
    )
    assert "--profile ../standin.toml" in changed["fix"]

    # the lock alone, away from its project (as an image keeps it): said, not an error
    alone = tmp_path / "image" / "opt"
    alone.mkdir(parents=True)
    shutil.copy(repo / "lockfiles" / "pylock.standin.toml", alone / "pylock.toml")
    far = run("audit", str(env.prefix), "--lock", str(alone / "pylock.toml"), "--format", "json", env=cache)
    assert far.code in (0, 1), far.err
    missing = _profile_finding(far)
    assert missing["status"] == "INFO" and "which is not here" in missing["summary"], missing

    # as `sparkenv build` keeps it in an image: the profile file beside the lock, under the build's name
    # (lock/profile.py KEPT); the profile as it was when locked
    profile.write_text(profile.read_text().replace('python = "3.12.9"', 'python = "3.12.3"'))
    shutil.copy(profile, alone / "lock-profile.toml")
    kept = _profile_finding(
        run("audit", str(env.prefix), "--lock", str(alone / "pylock.toml"), "--format", "json", env=cache)
    )
    assert kept["status"] == "PASS" and kept["summary"].endswith("unchanged since"), kept

"""A re-lock keeps the versions of the lock it replaces where the inputs allow, as `uv pip compile -o`
does with its output file: a release on the index moves nothing until the user says so (--upgrade,
--upgrade-package). Real wheels on a loopback index, the real uv."""

from __future__ import annotations

from pathlib import Path

import pytest
from artifacts import Index, serve

from sparkenv.core.datafiles import parse_toml
from sparkenv.lock import preferences


@pytest.fixture
def index(tmp_path: Path):
    ix = Index(tmp_path / "index")
    ix.wheel("app", "1.0", requires=["dep", "other"])
    ix.wheel("dep", "1.0")
    ix.wheel("other", "1.0")
    server = serve(ix)
    yield ix
    server.shutdown()


@pytest.fixture
def relock(run, index: Index, tmp_path: Path):
    req = tmp_path / "requirements.txt"
    req.write_text("app\n")
    calls = iter(range(100))

    def _lock(*args: str):
        n = next(calls)  # a cache of its own per lock: uv must see what the index serves now
        env = {"UV_CACHE_DIR": str(tmp_path / f"uv{n}"), "SPARKENV_CACHE_DIR": str(tmp_path / f"sp{n}")}
        r = run(
            "lock", str(req), "--index-url", index.url, "--output-dir", str(tmp_path / "out"), *args, env=env
        )
        assert r.code == 0, r.out + r.err
        return _versions(tmp_path / "out" / "pylock.ngc-25-11.toml")

    return _lock


def _versions(pylock: Path) -> dict[str, str]:
    return {p["name"]: p["version"] for p in parse_toml(pylock.read_text())["packages"]}


def test_a_release_moves_nothing_until_asked(relock, index: Index, tmp_path: Path):
    assert relock() == {"app": "1.0", "dep": "1.0", "other": "1.0"}
    # what uv is handed is what the lock says, read the quick way as a TOML parser reads it
    assert preferences.kept(tmp_path / "out" / "pylock.ngc-25-11.toml") == relock()
    index.wheel("dep", "2.0")
    index.wheel("other", "2.0")
    assert relock() == {"app": "1.0", "dep": "1.0", "other": "1.0"}  # kept: the lock it replaces said so
    assert relock("--upgrade-package", "DEP") == {"app": "1.0", "dep": "2.0", "other": "1.0"}
    assert relock("-U") == {"app": "1.0", "dep": "2.0", "other": "2.0"}


def test_a_kept_version_gives_way_to_the_inputs(relock, index: Index, tmp_path: Path):
    assert relock()["dep"] == "1.0"
    index.wheel("dep", "2.0")
    (tmp_path / "requirements.txt").write_text("app\ndep>=2\n")
    assert relock()["dep"] == "2.0"  # a preference, never a pin


@pytest.mark.parametrize(
    "damage",
    [
        "garbage = [\n",  # not TOML: uv itself would stop on it
        '[[packages]]\nname = "Dep_X"\nversion = "1.0"\n',  # not a name sparkenv writes
        '[[packages]]\nname = "dep"\nversion = "not a version"\n',
        "packages = 3\n",
        b"\xff\xfe".decode("latin-1"),
    ],
)
def test_a_damaged_lock_costs_the_preferences_never_the_lock(relock, index: Index, tmp_path: Path, damage):
    assert relock()["dep"] == "1.0"
    index.wheel("dep", "2.0")
    (tmp_path / "out" / "pylock.ngc-25-11.toml").write_text(damage, encoding="latin-1")
    assert relock()["dep"] == "2.0"  # resolved afresh, and written


def test_only_names_and_versions_reach_uv(tmp_path: Path):
    old = tmp_path / "pylock.toml"
    old.write_text(
        'lock-version = "1.0"\n[[packages]]\nname = "dep"\nversion = "1.0"\n'
        'sdist = { url = "https://user:secret@example.invalid/dep-1.0.tar.gz" }\n'
        '[[packages]]\nname = "odd"\nversion = "1.0-post0"\n'
    )
    out = tmp_path / "uv-out.toml"
    assert preferences.seed(old, out, preferences.KEEP) == 2
    text = out.read_text()
    assert "secret" not in text and "url" not in text
    assert {p["name"]: p["version"] for p in parse_toml(text)["packages"]} == {
        "dep": "1.0",
        "odd": "1.0.post0",
    }
    assert preferences.seed(old, tmp_path / "none.toml", preferences.Upgrade(all=True)) == 0
    assert not (tmp_path / "none.toml").exists()


def test_any_pylock_layout_is_read(tmp_path: Path):
    inline = tmp_path / "inline.toml"
    inline.write_text(
        'lock-version = "1.0"\n'
        'packages = [{ name = "dep", version = "1.0" }, { version = "2", name = "b" }]\n'
    )
    assert preferences.kept(inline) == {"dep": "1.0", "b": "2"}
    reordered = tmp_path / "reordered.toml"
    reordered.write_text('[[packages]]\nversion = "3.0"\nname = "dep"\n')
    assert preferences.kept(reordered) == {"dep": "3.0"}


def test_upgrade_package_names_are_checked(run, tmp_path: Path):
    req = tmp_path / "requirements.txt"
    req.write_text("app\n")
    r = run("lock", str(req), "--upgrade-package", "not a name!", "--output-dir", str(tmp_path / "out"))
    assert r.code == 2 and "--upgrade-package 'not a name!': not a package name" in r.err
    assert "Traceback" not in r.err and not (tmp_path / "out").exists()

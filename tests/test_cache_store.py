"""The one cache store (sparkenv/core/cache.py): what every cache of sparkenv keeps is read back only when
it is whole, of this store's version, this user's and writable by nobody else; anything else is a miss
that the next write replaces, never an error."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from sparkenv.core.cache import Store


@pytest.fixture
def store(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Store:
    monkeypatch.setenv("SPARKENV_CACHE_DIR", str(tmp_path / "cache"))
    return Store("things", "2")


def test_what_is_written_is_read_back_and_any_damage_is_a_miss(store: Store) -> None:
    store.save("k", {"a": [1, "caf\u00e9"]})
    assert store.load("k") == {"a": [1, "caf\u00e9"]}
    path = store.path("k")
    good = path.read_bytes()
    for damaged in (good[:-3], good.replace(b"caf", b"cat"), good.replace(b"things 2", b"things 1"), b""):
        path.write_bytes(damaged)
        assert store.load("k") is None, damaged
    store.save("k", {"a": 2})  # the miss is written anew
    assert store.load("k") == {"a": 2}
    assert Store("others", "2").load("k") is None  # another store's folder


def test_an_entry_others_may_write_is_not_read_and_umask_002_does_not_make_one(store: Store) -> None:
    old = os.umask(0o002)
    try:
        store.write("k", "text")
    finally:
        os.umask(old)
    assert store.path("k").stat().st_mode & 0o777 == 0o600
    assert store.read("k") == "text"
    store.path("k").chmod(0o620)
    assert store.read("k") is None


def test_a_fifo_or_an_oversized_entry_is_a_miss_without_blocking(store: Store) -> None:
    store.write("k", "text")
    store.path("k").unlink()
    os.mkfifo(store.path("k"))  # a plain open() would block here
    assert store.read("k") is None
    small = Store("things", "2", limit=16)
    store.write("big", "x" * 100)
    assert small.read("big") is None and store.read("big") == "x" * 100


def test_a_credential_is_never_kept(store: Store) -> None:
    store.write("https://alice:s3cret@index.example/simple/", "from https://alice:s3cret@index.example/x")
    (path,) = store.path("-").parent.iterdir()
    assert b"s3cret" not in path.read_bytes()
    got = store.read("https://alice:s3cret@index.example/simple/")
    assert got is not None and "s3cret" not in got and got.startswith("from https://")

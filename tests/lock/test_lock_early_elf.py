"""The ELF of GPU wheels read while uv resolves (lock/early.py, lock/wheel_elf.py), a wheel's
members fetched a few at a time, and the wheel the lock reads when uv picked another of the same
version: real shared objects compiled here, in real wheels served over loopback HTTP. What matters is
that the lock's answer is the one a read after uv gives: an early read only saves the wait."""

from __future__ import annotations

import hashlib
import zipfile

import pytest
from artifacts import Index, file_url, serve

from sparkenv.index import metadata
from sparkenv.lock import early, wheel_elf, wheel_files

ARM = "cp312-cp312-manylinux_2_28_aarch64"


def _sha(ix: Index, fname: str) -> str:
    return hashlib.sha256((ix.root / "files" / fname).read_bytes()).hexdigest()


def _ops(ix: Index, elves, count: int = 5, requires=("torch",), tag: str = ARM, version: str = "1.0") -> str:
    """A wheel of extensions built against torch: `count` real aarch64 shared objects, each linking a
    CUDA 13 runtime."""
    objects = {
        f"ops/_k{i}.so": elves.linked(("libcudart.so.13",), arch="aarch64", soname=f"libk{i}.so").read_bytes()
        for i in range(count)
    }
    return ix.wheel("ops", version, tag=tag, requires=list(requires), files=objects)


def _ref(ix: Index, fname: str) -> metadata.FileRef:
    return metadata.FileRef("ops", fname, file_url(ix.url, fname), _sha(ix, fname))


def _paths(ix: Index, fname: str) -> tuple[str, ...]:
    with zipfile.ZipFile(ix.root / "files" / fname) as zf:
        return wheel_files.shared_objects(tuple(n for n in zf.namelist() if n.endswith(".so")))


def _costs(ix: Index, fname: str) -> list[int]:
    with zipfile.ZipFile(ix.root / "files" / fname) as zf:
        return [zf.getinfo(p).compress_size for p in _paths(ix, fname)]


def _picked(ix: Index, fname: str, locked: dict[str, str]):  # type: ignore[no-untyped-def]
    """uv's log names `fname` as its pick of ops 1.0; the lock then holds `locked` (name -> sha256).
    Returns the (stopped) server, its requests listed."""
    server = serve(ix, ranges=True)
    try:
        reads = early.EarlyReads(ix.url)
        reads.line(f"DEBUG Selecting: ops==1.0 [compatible] ({fname})")
        reads.settle(locked)
    finally:
        server.shutdown()
    return server


@pytest.fixture
def caches(tmp_path, monkeypatch):
    """An empty uv cache (the metadata comes from the index) and a sparkenv cache; `fresh` switches to
    another, empty one (a cold read to compare with)."""
    monkeypatch.setenv("UV_CACHE_DIR", str(tmp_path / "uv"))
    monkeypatch.setenv("SPARKENV_CACHE_DIR", str(tmp_path / "sp"))

    def fresh(name: str) -> None:
        monkeypatch.setenv("SPARKENV_CACHE_DIR", str(tmp_path / name))

    return fresh


def test_a_gpu_wheels_elf_is_read_while_uv_resolves_and_the_lock_takes_it_without_a_request(
    tmp_path, elves, caches
):
    ix = Index(tmp_path / "ix")
    fname = _ops(ix, elves)
    server = serve(ix, ranges=True)
    try:
        reads = early.EarlyReads(ix.url)
        reads.line(f"DEBUG Selecting: ops==1.0 [compatible] ({fname})")
        reads.settle({fname: _sha(ix, fname)})
        asked = len(server.requests)
        ref = _ref(ix, fname)
        files = wheel_files.read([ref])["ops"]
        got = wheel_elf.read([ref], {"ops": wheel_files.shared_objects(files)})["ops"]
        assert len(server.requests) == asked  # file list and ELF: both answered while uv resolved
        caches("cold")  # the same read, after uv, on an empty cache
        cold = wheel_elf.read([ref], {"ops": _paths(ix, fname)})["ops"]
        assert len(server.requests) > asked
    finally:
        server.shutdown()
    assert got == cold
    assert got.unread == "" and [p for p, _ in got.objects] == list(_paths(ix, fname))
    assert all("libcudart.so.13" in info.needed for _, info in got.objects)


def test_a_wheel_that_needs_no_gpu_is_not_read_early(tmp_path, elves, caches):
    ix = Index(tmp_path / "ix")
    # torch only behind an extra: seldom asked for
    fname = _ops(ix, elves, count=2, requires=("numpy", 'torch; extra == "gpu"'))
    server = _picked(ix, fname, {fname: _sha(ix, fname)})
    ranges = [r for p, r in server.requests if p.endswith(fname) and r and not r.startswith("bytes=-")]
    assert ranges == []  # the central directory (a tail range) only: no member fetched
    assert metadata.STORE.path(f"{_sha(ix, fname)}.native-2").is_file()


def test_an_early_answer_is_taken_only_where_the_locks_budget_would_have_read_the_wheel_whole(
    tmp_path, elves, caches
):
    ix = Index(tmp_path / "ix")
    fname = _ops(ix, elves, count=4)
    paths, costs = _paths(ix, fname), _costs(ix, fname)
    short = sum(costs[:2])  # the lock's budget holds two of the four members
    server = serve(ix, ranges=True)
    ref = _ref(ix, fname)
    try:
        caches("cold")
        cold_budget = wheel_elf.Budget(short)
        cold = wheel_elf.read_one(ref, paths, cold_budget, 10)
        caches("sp")
        wheel_elf.read_early(ref, paths, wheel_elf.Budget(), 10)  # whole, on a budget of its own
        budget = wheel_elf.Budget(short)
        got = wheel_elf.read_one(ref, paths, budget, 10)
        # taken whole only on a budget that holds every member: then without a request
        wheel_elf.read_early(ref, paths, wheel_elf.Budget(), 10)
        asked = len(server.requests)
        whole_budget = wheel_elf.Budget(sum(costs))
        whole = wheel_elf.read_one(ref, paths, whole_budget, 10)
        assert len(server.requests) == asked
    finally:
        server.shutdown()
    assert got == cold and "past the read budget" in got.unread and len(got.objects) == 2
    assert budget.left == cold_budget.left == 0
    assert whole.unread == "" and len(whole.objects) == 4 and whole_budget.left == 0
    assert wheel_elf.read_one(ref, paths, wheel_elf.Budget(1), 10) == whole  # filed on disk, as a read is


def test_members_fetched_ahead_give_what_one_whole_download_gives(tmp_path, elves, caches):
    ix = Index(tmp_path / "ix")
    fname = _ops(ix, elves, count=6)
    paths = _paths(ix, fname)
    got = {}
    for ranges in (True, False):  # range requests, members a few at a time; the whole file at once
        server = serve(ix, ranges=ranges)
        try:
            caches(f"sp-{ranges}")
            got[ranges] = wheel_elf.read_one(_ref(ix, fname), paths, wheel_elf.Budget(), 10)
        finally:
            server.shutdown()
        if ranges:
            member_reads = [
                r for p, r in server.requests if p.endswith(fname) and not r.startswith("bytes=-")
            ]
            assert len(member_reads) == len(paths), server.requests
    assert got[True] == got[False] and len(got[True].objects) == 6 and got[True].unread == ""


def test_when_uv_picks_a_wheel_another_sorts_before_that_one_is_read_too(tmp_path, elves, caches):
    ix = Index(tmp_path / "ix")
    pick = _ops(ix, elves, count=1, tag="cp312-cp312-manylinux_2_28_aarch64")
    first = _ops(ix, elves, count=1, tag="cp312-cp312-manylinux2014_aarch64")  # the lock reads this one
    other_python = _ops(ix, elves, count=1, tag="cp311-cp311-manylinux2014_aarch64")  # sorts first, not ours
    other_arch = _ops(ix, elves, count=1, tag="cp312-cp312-manylinux2014_x86_64")  # not ours either
    assert max(first, other_python, other_arch) < pick  # all three sort before uv's pick
    server = _picked(ix, pick, {first: _sha(ix, first)})
    assert metadata.cached(_sha(ix, first), ".native-2") == "ops/_k0.so\n"
    # uv read the pick's metadata, not this one's
    assert metadata.STORE.path(f"{_sha(ix, first)}.metadata").is_file()
    read = {p.rsplit("/", 1)[-1] for p, _ in server.requests}
    assert other_python not in read and other_arch not in read

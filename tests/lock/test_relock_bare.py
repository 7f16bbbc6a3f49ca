"""A re-lock on the `spark-bare` profile (no base image: the CUDA libraries and torch's family are in the
resolved set) takes the judgement kept by the lock before it, as a re-lock on an NGC profile does. What
made the difference: a GPU wheel whose shared object is over the per-file read budget (as the largest
libraries of the CUDA wheels torch pulls in are) is read so by every lock, and such a read used to count
as one a later lock might finish, so the judgement was never kept and the wheel's members were fetched
again each time.
Real wheels (a real aarch64 ELF, a member of bytes that do not deflate) on a loopback index, the real uv,
the real CLI; whether the kept judgement was taken is read from the lock's own timeline."""

from __future__ import annotations

import random
from pathlib import Path

import pytest
from artifacts import Index, file_url, serve
from test_judged_cache import Locker

from sparkenv.lock import wheel_elf

ARM = "cp312-cp312-manylinux_2_28_aarch64"
BARE = ("--profile", "spark-bare")


@pytest.fixture(scope="module")
def index(tmp_path_factory: pytest.TempPathFactory, elves):
    ix = Index(tmp_path_factory.mktemp("index"))
    small = elves.linked(("libcudart.so.13",), arch="aarch64", soname="libops.so").read_bytes()
    # over the per-file budget in compressed bytes: random bytes after a real ELF, as a CUDA library's
    # largest shared object is to the lock
    big = small + random.Random(45).randbytes(wheel_elf.PER_OBJECT + (1 << 20))
    ix.wheel(
        "big-ops",
        "1.0",
        tag=ARM,
        requires=["nvidia-cuda-runtime==13.0.96"],
        files={"big_ops/_small.so": small, "big_ops/libbig.so.1": big},
    )
    ix.wheel("nvidia-cuda-runtime", "13.0.96", tag=ARM)
    ix.wheel("demo", "1.0")
    server = serve(ix, ranges=True)
    ix.requests = server.requests  # type: ignore[attr-defined]
    yield ix
    server.shutdown()


@pytest.fixture
def lock(run, index: Index, tmp_path: Path) -> Locker:
    return Locker(run, index, tmp_path)


def _member_reads(ix: Index, since: int) -> list[str]:
    """Range requests for big-ops' members (not its central directory, a tail range) since `since`."""
    got = ix.requests[since:]  # type: ignore[attr-defined]
    return [r for p, r in got if "big_ops" in p and r and not r.startswith("bytes=-")]


def test_a_bare_relock_takes_the_kept_judgement(lock, index):
    first = lock("big-ops\n", *BARE)
    assert first.code == 0, first.out + first.err
    assert not lock.kept
    # the big member is left unread, and the report says so (an INFO, never a PASS)
    found = first.json()["findings"]
    said = [f for f in found if f["subject"] == "big-ops" and "read budget" in f["summary"]]
    assert said and all(f["status"] == "INFO" for f in said), found
    written = lock.files()
    again = lock(None, *BARE)
    assert lock.expected and lock.kept, lock.marks
    assert again.json()["findings"] == first.json()["findings"]
    assert lock.files() == written  # byte for byte
    # judged in full again (no kept judgement): the wheel's read is kept too, no member is fetched again
    lock.forget()
    asked = len(index.requests)
    full = lock(None, *BARE)
    assert not lock.kept and "metadata read" in lock.marks
    assert full.json()["findings"] == first.json()["findings"]
    assert _member_reads(index, asked) == []


def test_a_bare_relock_with_a_changed_input_is_judged_again(lock):
    first = lock("big-ops\n", *BARE)
    assert first.code == 0, first.out + first.err
    # the same resolved set from other inputs: the inputs are part of what the judgement rests on
    changed = lock("big-ops>=1\n", *BARE)
    assert not lock.kept and not lock.expected and "metadata read" in lock.marks
    assert changed.json()["findings"] == first.json()["findings"]
    lock(None, *BARE)
    assert lock.kept
    # another resolved set: judged again
    lock("big-ops\ndemo\n", *BARE)
    assert not lock.kept and "metadata read" in lock.marks


def test_a_read_past_a_files_limit_is_kept_one_cut_by_the_locks_budget_is_not(index, tmp_path, monkeypatch):
    """In process, the wheel's read itself: what every lock reads of it is kept in the cache (and taken
    with no request); what the lock's budget cut short is not (a later lock reads more)."""
    import hashlib
    import zipfile

    from sparkenv.cuda import coverage
    from sparkenv.index import metadata
    from sparkenv.lock import wheel_files

    monkeypatch.setenv("SPARKENV_CACHE_DIR", str(tmp_path / "sp"))
    fname = next(p.name for p in (index.root / "files").glob("big_ops-*.whl"))
    sha = hashlib.sha256((index.root / "files" / fname).read_bytes()).hexdigest()
    ref = metadata.FileRef("big-ops", fname, file_url(index.url, fname), sha)
    with zipfile.ZipFile(index.root / "files" / fname) as zf:
        paths = wheel_files.shared_objects(tuple(n for n in zf.namelist() if ".so" in n))
    assert len(paths) == 2

    cut = wheel_elf.read_one(ref, paths, wheel_elf.Budget(1), 10)
    assert not cut.settled and cut.objects == () and "past the read budget" in cut.unread
    assert wheel_elf._cached(sha, coverage.gb10()) is None

    whole = wheel_elf.read_one(ref, paths, wheel_elf.Budget(), 10)
    assert whole.settled and [p for p, _ in whole.objects] == ["big_ops/_small.so"]
    assert "big_ops/libbig.so.1" in whole.unread and "past the read budget" in whole.unread
    # not in the file a whole read is kept in, where an earlier sparkenv would take it for one
    assert not metadata.STORE.path(f"{sha}{wheel_elf._suffix(coverage.gb10())}").exists()
    asked = len(index.requests)
    assert wheel_elf.read_one(ref, paths, wheel_elf.Budget(), 10) == whole
    assert index.requests[asked:] == []
    # kept for the limits it was read under only: with a larger one the member would be read
    monkeypatch.setattr(wheel_elf, "PER_OBJECT", wheel_elf.PER_OBJECT * 2)
    assert wheel_elf._cached(sha, coverage.gb10()) is None


def _stamps(folder: Path) -> dict[str, tuple[int, int]]:
    return {p.name: (p.stat().st_ino, p.stat().st_mtime_ns) for p in sorted(folder.iterdir())}


def test_a_relock_that_renders_the_same_bytes_leaves_the_files_as_they_were(lock):
    """Nothing is written again where the bytes would be the same (the lock's two files, the kept
    judgement's prediction); a changed input is judged again and its lock written."""
    first = lock("big-ops\n", *BARE)
    assert first.code == 0, first.out + first.err
    lock(None, *BARE)  # the prediction for the lock just written is made by this re-lock
    written, judged = _stamps(lock.out), _stamps(lock.cache / "judged-locks")
    again = lock(None, *BARE)
    assert lock.kept and again.json()["findings"] == first.json()["findings"]
    assert _stamps(lock.out) == written and _stamps(lock.cache / "judged-locks") == judged
    before = lock.files()
    changed = lock("big-ops>=1\n", *BARE)
    assert not lock.kept and "metadata read" in lock.marks
    assert changed.json()["findings"] == first.json()["findings"]
    # the lock records its inputs' hash: new bytes, written
    assert lock.files()["pylock.spark-bare.toml"] != before["pylock.spark-bare.toml"]
    assert _stamps(lock.out)["pylock.spark-bare.toml"] != written["pylock.spark-bare.toml"]

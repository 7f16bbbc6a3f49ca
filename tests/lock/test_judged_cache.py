"""A re-lock whose answer did not change takes the judgement kept from the last lock
(lock/judged_cache.py): the same lock files byte for byte and the same findings as a full judgement;
anything the judgement reads that changed (uv's answer, an index page, the inputs, an option, sparkenv
itself) has it judged again; a damaged entry is not trusted; an incomplete judgement is not kept; no
credential is kept. Real wheels on a loopback index, the real uv, the real CLI; whether the kept
judgement was taken is read from the lock's own timeline (SPARKENV_LOCK_TIMELINE)."""

from __future__ import annotations

import json
import os
import shutil
import sys
import time
from pathlib import Path

import pytest
from artifacts import Index, serve

ARM = "cp312-cp312-manylinux_2_17_aarch64"
PER_RELEASE = {f"quantlib/libql_cuda{v}.so": b"\x7fELF" for v in ("118", "121", "126", "128", "129")}
PYLOCK = "pylock.ngc-25-11.toml"


def _index(root: Path) -> Index:
    ix = Index(root)
    ix.wheel("app", "1.0", requires=["dep"])
    ix.wheel("dep", "1.0")
    ix.wheel("demo", "1.0")
    # per CUDA release native libraries: 1.0 has none for CUDA 13 (a FAIL), 2.0 has one
    ix.wheel("quantlib", "1.0", tag=ARM, files=PER_RELEASE)
    ix.wheel("quantlib", "2.0", tag=ARM, files={**PER_RELEASE, "quantlib/libql_cuda130.so": b"\x7fELF"})
    return ix


@pytest.fixture
def index(tmp_path: Path):
    ix = _index(tmp_path / "index")
    server = serve(ix, ranges=True)
    yield ix
    server.shutdown()


def _changed(ix: Index, key: str) -> None:
    """The project's page written again, dated later: a conditional request (If-Modified-Since, to the
    second) must see it changed."""
    ix._write_page(key)
    later = time.time() + 10
    os.utime(ix.root / "simple" / key / "index.html", (later, later))


def _remove(ix: Index, key: str, fname: str) -> None:
    ix._files[key].remove(fname)
    (ix.root / "files" / fname).unlink()
    (ix.root / "files" / f"{fname}.metadata").unlink(missing_ok=True)
    _changed(ix, key)


class Locker:
    """`sparkenv lock` of one requirements file into one folder, with sparkenv's cache kept between
    locks (what a user's re-lock sees) and a cache of uv's own per lock (uv must see what the index
    serves now)."""

    def __init__(self, run, ix: Index, tmp: Path) -> None:
        self.run, self.ix, self.tmp = run, ix, tmp
        self.req = tmp / "requirements.txt"
        self.out = tmp / "out"
        self.cache = tmp / "sparkenv-cache"
        self.calls = 0
        self.marks: list[str] = []

    def __call__(self, text: str | None = None, *args: str, env: dict[str, str] | None = None):
        if text is not None:
            self.req.write_text(text)
        self.calls += 1
        timeline = self.tmp / f"timeline{self.calls}.jsonl"
        full_env = {
            "UV_CACHE_DIR": str(self.tmp / f"uv{self.calls}"),
            "SPARKENV_CACHE_DIR": str(self.cache),
            "SPARKENV_LOCK_TIMELINE": str(timeline),
            **(env or {}),
        }
        r = self.run(
            "lock", str(self.req), "--index-url", self.ix.url, "--output-dir", str(self.out), "--json",
            *args, env=full_env, cwd=self.tmp,  # `python -m` puts the working folder first on sys.path
        )  # fmt: skip
        assert r.code in (0, 1), r.out + r.err
        # exit 1 is also an interpreter that could not start sparkenv: the timeline says the lock ran
        assert timeline.exists(), f"the lock wrote no timeline (exit {r.code}): {r.err[-2000:]}"
        self.marks = [m[0] for m in json.loads(timeline.read_text().splitlines()[-1])["marks"]]
        return r

    @property
    def kept(self) -> bool:
        """Whether the last lock took a kept judgement."""
        return "kept judgement taken" in self.marks

    @property
    def expected(self) -> bool:
        """Whether the last lock expected, before uv, to take one."""
        return "kept judgement expected" in self.marks

    def files(self) -> dict[str, bytes]:
        return {p.name: p.read_bytes() for p in sorted(self.out.glob("*"))}

    def forget(self) -> None:
        shutil.rmtree(self.cache / "judged-locks", ignore_errors=True)


@pytest.fixture
def lock(run, index: Index, tmp_path: Path) -> Locker:
    return Locker(run, index, tmp_path)


def _findings(r) -> list[dict]:
    return r.json()["findings"]


def _status(r, gid: str, subject: str) -> str:
    return next(f["status"] for f in _findings(r) if f["id"] == gid and f["subject"] == subject)


def test_a_relock_with_the_same_answer_takes_the_kept_judgement_and_writes_the_same(lock):
    first = lock("app\nquantlib\ndemo\n")
    assert first.code == 0, first.out + first.err
    assert not lock.kept and not lock.expected
    written = lock.files()
    again = lock()
    assert lock.expected and lock.kept
    assert _findings(again) == _findings(first)
    assert lock.files() == written  # byte for byte
    # the same lock judged in full (no kept judgement): the same findings and files
    lock.forget()
    full = lock()
    assert not lock.kept and "metadata read" in lock.marks
    assert _findings(full) == _findings(first)
    assert lock.files() == written


def test_the_files_are_rendered_anew_where_what_they_record_changed(lock):
    """A comment added to the inputs changes no requirement (the kept judgement holds) but the inputs'
    hash the lock records: the files are those a full judgement writes, not last time's."""
    lock("quantlib\ndemo\n")
    before = lock.files()
    lock.req.write_text("quantlib\ndemo\n# a comment\n")
    lock()
    assert lock.kept
    after = lock.files()
    assert after != before
    lock.forget()
    lock()
    assert not lock.kept
    assert lock.files() == after


def test_a_new_release_on_an_index_page_has_the_lock_judged_again(lock, index):
    lock("demo\n")
    lock()
    assert lock.kept
    assert not any(f["id"] == "G9" and f["subject"] == "demo" for f in _findings(lock()))
    # demo 2.0 appears: uv keeps 1.0 (the lock replaced prefers it), but the page the old-fallback
    # verdict reads has changed
    index.wheel("demo", "2.0")
    _changed(index, "demo")
    moved = lock()
    assert lock.expected and not lock.kept
    assert b'version = "1.0"' in lock.files()[PYLOCK]
    assert _status(moved, "G9", "demo") == "WARN"
    assert any("newest release is 2.0" in f["summary"] for f in _findings(moved))
    lock()  # the new judgement is kept in its turn
    assert lock.kept


def test_uv_answering_otherwise_than_expected_is_judged_afresh(lock, index):
    first = lock("quantlib\n")
    assert _status(first, "G1", "quantlib") == "PASS"
    lock()
    assert lock.kept
    # the version the lock holds leaves the index: the same inputs, options and lock to replace, so the
    # kept judgement is expected, but uv answers 1.0
    _remove(index, "quantlib", "quantlib-2.0-cp312-cp312-manylinux_2_17_aarch64.whl")
    moved = lock()
    assert lock.expected and not lock.kept
    assert _status(moved, "G1", "quantlib") == "FAIL"  # never the kept PASS
    assert moved.code == 1


def test_an_edited_lock_to_replace_is_judged_afresh(lock):
    lock("quantlib\n")
    pylock = lock.out / PYLOCK
    text = pylock.read_text()
    assert 'version = "2.0"' in text
    pylock.write_text(text.replace('version = "2.0"', 'version = "1.0"'))  # uv now prefers 1.0
    moved = lock()
    assert not lock.expected and not lock.kept
    assert _status(moved, "G1", "quantlib") == "FAIL"


@pytest.mark.parametrize(
    "change",
    [
        ("quantlib>=1\n",),  # the inputs (uv answers the same)
        (None, "--profile", "PROFILE"),  # the same profile from a file of the user's
        (None, "--allow-replace", "torch"),  # what is kept out of the resolution
        (None, "--extra-index-url", "EXTRA"),  # the index options
    ],
    ids=["inputs", "profile", "allow-replace", "extra-index"],
)
def test_each_part_of_the_key_has_the_judgement_redone(lock, index, change, tmp_path):
    import sparkenv

    lock("quantlib\n")
    lock()
    assert lock.kept
    text, *args = change
    profile = tmp_path / "ngc-25.11.toml"
    shutil.copyfile(Path(sparkenv.__file__).parent / "data" / "profiles" / "ngc-25.11.toml", profile)
    swap = {"EXTRA": index.url.replace("/simple/", "/other/simple/"), "PROFILE": str(profile)}
    args = [swap.get(a, a) for a in args]
    lock(text, *args)
    assert not lock.kept and "metadata read" in lock.marks
    lock(None, *args)  # and that judgement is kept in its turn
    assert lock.kept


def test_upgrade_with_the_same_answer_takes_the_kept_judgement(lock):
    """--upgrade changes what is known before uv (no kept judgement expected), not uv's answer."""
    lock("quantlib\n")
    lock(None, "--upgrade")
    assert not lock.expected and lock.kept


def test_sparkenv_itself_changed_has_the_judgement_redone(lock, tmp_path):
    """A data file edited in place (here only its mtime) is part of the key: a copy of sparkenv runs."""
    import sparkenv

    copy = tmp_path / "copy"
    shutil.copytree(Path(sparkenv.__file__).parent, copy / "sparkenv", ignore=shutil.ignore_patterns("*.pyc"))
    env = {"PYTHONPATH": str(copy)}
    lock("quantlib\n", env=env)
    lock(None, env=env)
    assert lock.kept
    data = copy / "sparkenv" / "data" / "packages.toml"
    later = time.time() + 10
    os.utime(data, (later, later))
    lock(None, env=env)
    assert not lock.kept


def _entries(lock: Locker) -> list[Path]:
    """The kept judgements (not the predictions, nor the declared findings kept beside them)."""
    return sorted(p for p in (lock.cache / "judged-locks").glob("*") if "." not in p.name)


@pytest.mark.parametrize("damage", ["garbage", "truncated", "flipped", "another-version"])
def test_a_damaged_entry_is_not_trusted_and_is_written_again(lock, index, damage):
    _remove(index, "quantlib", "quantlib-2.0-cp312-cp312-manylinux_2_17_aarch64.whl")
    first = lock("quantlib\n")
    assert _status(first, "G1", "quantlib") == "FAIL"
    (entry,) = _entries(lock)
    raw = entry.read_text()
    if damage == "garbage":
        entry.write_bytes(os.urandom(64))
    elif damage == "truncated":
        entry.write_text(raw[: len(raw) // 2])
    elif damage == "flipped":  # a FAIL turned into a PASS, the checksum left as it was
        assert '"FAIL"' in raw
        entry.write_text(raw.replace('"FAIL"', '"PASS"'))
    else:  # an older sparkenv's entry, its checksum right
        assert raw.startswith("judged-locks 1 ")
        entry.write_text(raw.replace("judged-locks 1 ", "judged-locks 0 ", 1))
    again = lock()
    assert not lock.kept
    assert _status(again, "G1", "quantlib") == "FAIL"
    assert _findings(again) == _findings(first)
    lock()  # written again, whole: taken now
    assert lock.kept
    assert _findings(lock()) == _findings(first)


def test_a_judgement_with_a_build_failure_is_not_kept(lock, index):
    index.sdist(
        "needs-torch-to-build",
        "1.0",
        ["torch>=99"],
        files={
            "pyproject.toml": '[build-system]\nrequires = []\nbuild-backend = "backend"\n'
            'backend-path = ["."]\n',
            "backend.py": "import torch  # noqa: F401\n",
        },
        metadata_version="2.1",
    )
    index.wheel("builds", "1.0", requires=["needs-torch-to-build"])
    lock("builds\n")
    lock()
    assert not lock.kept and not lock.expected
    assert _entries(lock) == []


def test_no_credential_is_kept(run, tmp_path):
    ix = _index(tmp_path / "index")
    server = serve(ix, ranges=True, auth="alice:s3cret-token")
    try:
        ix.url = ix.url.replace("http://", "http://alice:s3cret-token@")
        lock = Locker(run, ix, tmp_path)
        lock("quantlib\ndemo\n")
        lock()
        assert lock.kept
    finally:
        server.shutdown()
    kept = [p for p in (lock.cache / "judged-locks").rglob("*") if p.is_file()]
    assert kept
    for path in kept:
        assert b"s3cret" not in path.read_bytes(), path


def test_the_kept_judgement_is_what_a_full_one_says_in_process(monkeypatch, tmp_path):
    """judged_cache.load gives back exactly what save kept (statuses, evidence, fixes, odd text)."""
    monkeypatch.setenv("SPARKENV_CACHE_DIR", str(tmp_path))
    from sparkenv.core.report import Finding, Status
    from sparkenv.lock import judged_cache

    found = [
        Finding("G1", Status.FAIL, "no CUDA 13 library", "quantlib", ("a", "b"), "pin it"),
        Finding("G9", Status.WARN, "caf\udcff is old", "caf\udcff", (), None),
    ]
    key = judged_cache.key("test", sys.version)
    pages = {"demo": ("http://127.0.0.1:9/simple/demo/", "a" * 64)}
    judged_cache.save(key, found, pages)
    entry = judged_cache.load(key)
    assert entry is not None
    assert list(entry.findings) == found
    assert entry.pages == pages
    assert judged_cache.load(judged_cache.key("another")) is None

"""A re-lock starts uv from the command the last lock of the same command line ran (lock/spawn_cache.py),
then computes its own and keeps that uv only when the two are the same. What users rely on: the lock is
the one a lock without the cache writes, whatever changed in between (an input edited in place with its
size and mtime put back, an include, the profile, the index, the lock being replaced); a wrong or damaged
entry costs time, never the lock; nothing kept holds a credential; a stopped lock leaves no uv behind.
Real wheels on a loopback index, the real uv, real processes and signals. Whether uv came from the cache
is read from the lock's timeline (SPARKENV_LOCK_TIMELINE), the benchmark's own record."""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import sys
import time
import zlib
from pathlib import Path

import pytest
from artifacts import Index, default_dispositions, serve
from test_lock_signals import _alive

FROM_CACHE = "uv spawned from the spawn cache"
KEPT = "spawn cache: uv kept"
REPLACED = "spawn cache: uv replaced"


@pytest.fixture
def index(tmp_path: Path):
    ix = Index(tmp_path / "index")
    ix.wheel("solo", "1.0")
    ix.wheel("solo", "2.0")
    ix.wheel("duo", "1.0")
    ix.server = serve(ix)  # type: ignore[attr-defined]
    yield ix
    ix.server.shutdown()  # type: ignore[attr-defined]


class Locker:
    """`sparkenv lock` of one project, its spawn cache in `sp`; each lock's timeline marks kept."""

    def __init__(self, run, tmp: Path, index: Index) -> None:  # type: ignore[no-untyped-def]
        self.run, self.tmp, self.index = run, tmp, index
        self.req = tmp / "requirements.txt"
        self.out = tmp / "out"
        self.env = {"UV_CACHE_DIR": str(tmp / "uv"), "SPARKENV_CACHE_DIR": str(tmp / "sp")}
        self.args: list[str] = ["--index-url", index.url]
        self.calls = 0

    def lock(self, *extra: str, out: Path | None = None, env: dict[str, str] | None = None) -> list[str]:
        """One lock; the names of its timeline's marks."""
        self.calls += 1
        timeline = self.tmp / f"timeline{self.calls}.jsonl"
        full = {**self.env, **(env or {}), "SPARKENV_LOCK_TIMELINE": str(timeline)}
        r = self.run(
            "lock", str(self.req), *self.args, "--output-dir", str(out or self.out), *extra, env=full,
            cwd=self.tmp,
        )  # fmt: skip
        assert r.code == 0, r.out + r.err
        return [m[0] for m in json.loads(timeline.read_text().splitlines()[-1])["marks"]]

    def control(self, *extra: str, env: dict[str, str] | None = None) -> dict[str, str]:
        """The lock files a lock without the spawn cache writes now, replacing the same lock (a copy of
        the output folder beside it, so that the inputs' paths read the same from both)."""
        ctl = self.tmp / "ctl"
        shutil.rmtree(ctl, ignore_errors=True)
        shutil.copytree(self.out, ctl)
        fresh = {"SPARKENV_CACHE_DIR": str(self.tmp / f"sp-control{self.calls}"), **(env or {})}
        assert FROM_CACHE not in self.lock(*extra, out=ctl, env=fresh)
        return files(ctl)


def files(folder: Path) -> dict[str, str]:
    return {p.name: p.read_text() for p in sorted(folder.iterdir())}


def version(folder: Path) -> str:
    text = (folder / "requirements.ngc-25-11.txt").read_text()
    return next(ln.split("==")[1].split()[0] for ln in text.splitlines() if ln.startswith("solo=="))


@pytest.fixture
def locker(run, tmp_path: Path, index: Index) -> Locker:  # type: ignore[no-untyped-def]
    return Locker(run, tmp_path, index)


def test_a_relock_starts_uv_from_the_cache_and_writes_the_same_lock(locker: Locker):
    locker.req.write_text("solo\n")
    first = locker.lock()
    assert FROM_CACHE not in first  # nothing cached yet
    written = files(locker.out)
    again = locker.lock()
    assert FROM_CACHE in again and KEPT in again and REPLACED not in again
    # uv from the cache starts before the lock has read its inputs
    assert again.index(FROM_CACHE) < again.index("inputs read")
    assert files(locker.out) == written == locker.control()
    # the same bytes again: neither the lock's files nor the entry are written again
    stamps = {p: (p.stat().st_ino, p.stat().st_mtime_ns) for p in [*locker.out.iterdir(), _entry(locker)]}
    assert KEPT in locker.lock()  # the lock just written is the next one's preferences: still a hit
    assert {p: (p.stat().st_ino, p.stat().st_mtime_ns) for p in stamps} == stamps


def _same_size_and_mtime(path: Path, old: str, new: str) -> None:
    """Edit a file in place, its size and mtime put back (its ctime moves: the kernel's)."""
    st = path.stat()
    text = path.read_text()
    assert len(old) == len(new) and old in text
    path.write_text(text.replace(old, new))
    os.utime(path, ns=(st.st_atime_ns, st.st_mtime_ns))
    assert path.stat().st_size == st.st_size and path.stat().st_mtime_ns == st.st_mtime_ns


def _edit_input(locker: Locker) -> None:
    _same_size_and_mtime(locker.req, "solo==1.0", "solo==2.0")


def _edit_include(locker: Locker) -> None:
    _same_size_and_mtime(locker.tmp / "pins.txt", "solo==1.0", "solo==2.0")


def _edit_profile(locker: Locker) -> None:
    prof = locker.tmp / "target.toml"
    prof.write_text(prof.read_text().replace('python = "3.12.3"', 'python = "3.11.9"'))


def _change_index(locker: Locker) -> None:
    other = Index(locker.tmp / "other-index")
    other.wheel("solo", "3.0")
    locker.servers.append(serve(other))  # type: ignore[attr-defined]
    locker.env["UV_INDEX_URL"] = other.url
    locker.args = []


def _edit_previous_lock(locker: Locker) -> None:
    """solo 2.0 (the newest) locked, the lock edited to say 1.0: uv is to keep 1.0."""
    _same_size_and_mtime(locker.out / "pylock.ngc-25-11.toml", 'version = "2.0"', 'version = "1.0"')


@pytest.mark.parametrize(
    "change",
    [_edit_input, _edit_include, _edit_profile, _change_index, _edit_previous_lock],
    ids=["input-same-size-and-mtime", "include", "profile", "environment-index", "previous-lock"],
)
def test_whatever_changed_the_lock_is_the_one_without_the_cache(locker: Locker, change):  # type: ignore[no-untyped-def]
    locker.servers = []  # type: ignore[attr-defined]
    (locker.tmp / "pins.txt").write_text("solo==1.0\n")
    (locker.tmp / "target.toml").write_text('name = "target"\nimage = ""\npython = "3.12.3"\n')
    if change is _edit_input:
        locker.req.write_text("solo==1.0\n")
    elif change is _edit_include:
        locker.req.write_text("-r pins.txt\n")
    elif change is _edit_previous_lock:
        locker.req.write_text("solo\nduo\n")  # solo: uv keeps the version the lock names
    else:
        locker.req.write_text("solo\n")
    extra: tuple[str, ...] = ()
    if change is _edit_profile:
        extra = ("--profile", str(locker.tmp / "target.toml"))
    if change is _change_index:  # the index from the environment, as uv reads it
        locker.env["UV_INDEX_URL"] = locker.index.url
        locker.args = []
    try:
        locker.lock(*extra)
        assert KEPT in locker.lock(*extra)
        change(locker)
        before = files(locker.out)
        marks = locker.lock(*extra)
        assert KEPT not in marks  # the command changed: uv from the cache (if any) was not kept
        got = files(locker.out)
        assert got != before or change is _edit_previous_lock
        shutil.copytree(locker.out, locker.tmp / "got")
        # the control replaces the lock the changed one replaced
        for name, text in before.items():
            (locker.out / name).write_text(text)
        assert got == locker.control(*extra)
        expected = {"_edit_input": "2.0", "_edit_include": "2.0", "_change_index": "3.0"}
        if change.__name__ in expected:
            assert version(locker.tmp / "got") == expected[change.__name__]
        if change is _edit_previous_lock:
            assert version(locker.tmp / "got") == "1.0"  # the lock as edited: its version kept
    finally:
        for server in locker.servers:  # type: ignore[attr-defined]
            server.shutdown()


def _entry(locker: Locker) -> Path:
    (entry,) = (locker.tmp / "sp" / "spawn").iterdir()
    return entry


def test_a_stale_entry_is_replaced_by_the_right_uv(locker: Locker):
    """An entry whose key and stamps match but whose command is not the one the lock computes (as a
    change the stamps cannot see would leave it): uv from it is killed, the right one started."""
    locker.req.write_text("solo==1.0\n")
    locker.lock()
    entry = _entry(locker)
    head, _, body = entry.read_bytes().partition(b"\n")
    body = body.replace(b"solo==1.0", b"solo==2.0")
    name, store_version, _ = head.split(b" ")
    # a sound entry (core/cache.py's first line, its checksum right), with the wrong command
    entry.write_bytes(b"%s %s %08x\n" % (name, store_version, zlib.crc32(body)) + body)
    marks = locker.lock()
    assert FROM_CACHE in marks and REPLACED in marks and KEPT not in marks
    assert version(locker.out) == "1.0"
    assert b"solo==1.0" in entry.read_bytes()  # rewritten with the command the lock ran
    assert KEPT in locker.lock()


@pytest.mark.parametrize(
    "damage",
    [
        lambda b: b[: len(b) // 2],
        lambda b: b.replace(b"solo==1.0", b"solo==2.0"),  # the checksum no longer holds
        lambda b: b"\0".join(b.split(b"\0")[:5]),
        lambda b: b"",
        lambda b: os.urandom(300),
    ],
    ids=["truncated", "edited", "fields-missing", "empty", "noise"],
)
def test_a_damaged_entry_is_ignored_and_rewritten(locker: Locker, damage):  # type: ignore[no-untyped-def]
    locker.req.write_text("solo==1.0\n")
    locker.lock()
    entry = _entry(locker)
    entry.write_bytes(damage(entry.read_bytes()))
    marks = locker.lock()
    assert FROM_CACHE not in marks
    assert version(locker.out) == "1.0"
    assert KEPT in locker.lock()  # written anew


def test_an_entry_others_may_write_is_not_read(locker: Locker):
    locker.req.write_text("solo==1.0\n")
    locker.lock()
    _entry(locker).chmod(0o666)
    assert FROM_CACHE not in locker.lock()


def test_nothing_kept_holds_a_credential(run, tmp_path: Path):  # type: ignore[no-untyped-def]
    ix = Index(tmp_path / "index")
    ix.wheel("solo", "1.0")
    server = serve(ix, auth="alice:s3cret-token")
    try:
        locker = Locker(run, tmp_path, ix)
        locker.req.write_text("solo\n")
        with_info = ix.url.replace("http://", "http://alice:s3cret-token@")
        for args, env in (
            (["--index-url", with_info], {}),  # on the command line: uv's argv would hold it
            (["--index-url", ix.url], {"PIP_INDEX_URL": with_info}),  # pip's variable: uv gets a netrc
            ([], {"UV_INDEX_URL": with_info}),  # uv's own variable: uv reads it, the key holds it redacted
        ):
            locker.args = args
            locker.env.update(env)
            locker.lock()
            locker.lock()
            for k in env:
                locker.env.pop(k)
        kept = list((tmp_path / "sp" / "spawn").iterdir())
        assert len(kept) == 1  # only the third: its command holds no credential
        assert FROM_CACHE in locker.lock(env={"UV_INDEX_URL": with_info}) and locker.args == []
        for path in (tmp_path / "sp").rglob("*"):
            if path.is_file():
                assert b"s3cret" not in path.read_bytes(), path
    finally:
        server.shutdown()


def test_a_secret_in_uvs_variables_is_never_kept(locker: Locker):
    """A shell that exports uv's credentials (a named index's password, a publish token): uv reads them
    itself, the cached command never holds them, and the entry (which holds the key) holds none either."""
    locker.req.write_text("solo\n")
    secrets = {"UV_INDEX_PRIVATE_PASSWORD": "s3cret-password", "UV_PUBLISH_TOKEN": "s3cret-token"}
    locker.lock(env=secrets)
    assert FROM_CACHE in locker.lock(env=secrets)  # still a hit
    kept = [p for p in (locker.tmp / "sp").rglob("*") if p.is_file()]
    assert any(p.parent.name == "spawn" for p in kept)
    for path in kept:
        assert b"s3cret" not in path.read_bytes(), path


SPY = (
    "import sys\n"
    "import sparkenv.core.children as c\n"
    "spawn, pid_file = c.spawn, sys.argv.pop(1)\n"
    "def spy(*a, **k):\n"
    "    p = spawn(*a, **k)\n"
    "    if a[0][1:3] == ['pip', 'compile']:\n"
    "        early = 'sparkenv.lock.inputs' not in sys.modules\n"  # started before the inputs were read
    "        open(pid_file, 'w').write(f'{p.pid} {early}')\n"
    "    return p\n"
    "c.spawn = spy\n"
    "sys.argv[0] = 'sparkenv'\n"
    "from sparkenv.cli.entry import main; main()\n"
)


def _spawn_lock(locker: Locker, *extra: str) -> tuple[subprocess.Popen[str], Path]:
    """The lock in a process of its own; the file where its first child (uv) writes its pid."""
    pid_file = locker.tmp / "uv.pid"
    env = {**os.environ, **locker.env, "TMPDIR": str(locker.tmp / "tmp")}
    cmd = [sys.executable, "-c", SPY, str(pid_file), "lock", str(locker.req), *locker.args,
           "--output-dir", str(locker.out), *extra]  # fmt: skip
    proc = subprocess.Popen(
        cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env, cwd=locker.tmp,
        preexec_fn=default_dispositions,
    )  # fmt: skip
    return proc, pid_file


def _uv_pid(pid_file: Path) -> int:
    """uv's pid, once started; it was started from the cache, before the lock read its inputs."""
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline:
        if pid_file.is_file() and pid_file.read_text():
            pid, early = pid_file.read_text().split()
            assert early == "True"
            return int(pid)
        time.sleep(0.005)
    raise AssertionError("uv never started")


@pytest.fixture
def stalled(locker: Locker, index: Index):
    """A lock that filled the cache; then the index stops answering (every request waits) and uv's
    cache is fresh, so a re-lock's uv is certainly still running when the test stops it."""
    locker.req.write_text("solo==1.0\n")
    locker.env["UV_HTTP_TIMEOUT"] = "120"
    locker.lock()
    (locker.tmp / "tmp").mkdir()
    handler = index.server.RequestHandlerClass.func  # type: ignore[attr-defined]
    handler.delay = 60.0
    shutil.rmtree(locker.env["UV_CACHE_DIR"])  # the same setting (the cache's key), an empty cache
    yield locker
    handler.delay = 0.0


@pytest.mark.parametrize("sig, code", [(signal.SIGTERM, 143), (signal.SIGINT, 130)])
def test_a_stopped_relock_leaves_no_uv_behind(stalled: Locker, sig, code):  # type: ignore[no-untyped-def]
    before = files(stalled.out)
    proc, pid_file = _spawn_lock(stalled)
    try:
        uv = _uv_pid(pid_file)  # uv from the cache: stopped at once, most likely before the lock kept it
        proc.send_signal(sig)
        _, err = proc.communicate(timeout=30)
    finally:
        if proc.poll() is None:
            proc.kill()
    assert proc.returncode == code, err
    assert f"process group {uv}" in err and "no lock written" in err
    assert len(err.strip().splitlines()) == 1, err
    assert not _alive(uv)
    assert not list((stalled.tmp / "tmp").iterdir())  # the work folder removed
    assert files(stalled.out) == before


def test_an_error_after_the_early_start_leaves_no_uv_behind(stalled: Locker):
    """A --report that cannot be written is found after uv started from the cache: exit 2, uv gone."""
    proc, pid_file = _spawn_lock(stalled, "--report", str(stalled.tmp / "no-such-dir" / "r.json"))
    try:
        _, err = proc.communicate(timeout=30)
    finally:
        if proc.poll() is None:
            proc.kill()
    assert proc.returncode == 2 and "no-such-dir" in err, err
    assert not _alive(_uv_pid(pid_file))  # it was started, from the cache, and is gone
    assert not list((stalled.tmp / "tmp").iterdir())

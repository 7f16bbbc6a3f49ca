"""A re-lock starts uv from the command the last lock of the same inputs ran, before it knows its own.

Before uv can start, `sparkenv lock` imports its inputs' reader, the profiles and packaging's parsers,
reads the inputs, loads the profile and writes uv's files: a tenth to a fifth of a second, 10-15 % of a
warm uv's run. A re-lock of unchanged inputs computes the same command again. So after each lock's spawn
the command is kept here — uv's argv, the files it reads (requirements, constraints, preferences) and
that it needed no netrc — keyed by what it is computed from: the command line, the working folder,
sparkenv's version and interpreter, the environment variables the lock and its credentials read, and the
stat (size, mtime, ctime, inode, device) of every file read on the way — each input and include, the
profile file or sparkenv's profile and data files, the project's pyproject.toml, the lock being replaced,
uv itself. On a hit uv is spawned at once, from the cache; the lock then computes the command the normal
way and compares (lock/resolving.py `Resolving.start`): equal, the early uv is kept; different in anything,
it is killed and the right one spawned. A wrong entry therefore costs time, never a wrong lock, and a
file edited in place with its size and mtime put back (its ctime still moves) is caught twice.

Nothing here holds a credential: an entry is not written when its command or files hold a URL's
user-info (an index given with its password on the command line or in an input) or when uv needed a netrc
(a credential only pip's variables hold); the environment enters the key with every URL's user-info
removed. An entry is read as every cache's is (core/cache.py: this user's, writable by nobody else, its
checksum right), every field checked; anything else is a miss, and the lock writes it anew.

The format is plain text, NUL-separated fields: no JSON decoder imported before uv starts."""

from __future__ import annotations

import contextlib
import os
import sys
from pathlib import Path
from typing import Any

from sparkenv.core.cache import Store, stat_key
from sparkenv.lock import timeline
from sparkenv.lock.uv_process import Running

STORE = Store("spawn", "2")  # core/cache.py; bump the version when an entry's fields change
_WORK = "\x01WORK\x01"  # the work folder's path in a stored command and its files
_PREFIX = "sparkenv-lock-"  # the work folder's name
# environment variables the lock's command depends on, directly or through the credentials it looks for
_ENV_PREFIXES = ("UV_", "PIP_", "SPARKENV_")
_ENV_NAMES = ("PATH", "HOME", "NETRC", "XDG_CACHE_HOME")
_ENV_SKIPPED = ("SPARKENV_LOCK_TIMELINE", "SPARKENV_CHILD_OF", "SPARKENV_DEBUG")
# a variable whose name says it holds a secret (uv's UV_INDEX_<NAME>_PASSWORD, UV_PUBLISH_TOKEN, …) enters
# the key by its name only: uv reads it from its environment, the command sparkenv computes never holds
# it, and the key is written into the entry
_SECRET = ("PASS", "TOKEN", "SECRET", "CREDENTIAL", "AUTH", "APIKEY", "API_KEY", "PRIVATE")
_DATA = Path(__file__).resolve().parent.parent / "data"


class _Named:
    """The stage an early uv's errors name until the lock's own Stage takes its place."""

    def __init__(self, name: str) -> None:
        self.name = name


def key(fields: tuple[Any, ...]) -> str | None:
    """The lookup key of a lock's command line (its options' values, in order): None when they hold a
    credential (an index URL's user-info), which no entry may hold."""
    from sparkenv import __version__
    from sparkenv.core.redact import redact

    lines = [
        f"sparkenv {__version__} {sys.executable} {sys.prefix}",
        f"cwd {os.getcwd()}",
        f"args {fields!r}",
    ]
    if redact(lines[2]) != lines[2]:
        return None
    for name in sorted(os.environ):
        if (name.startswith(_ENV_PREFIXES) or name in _ENV_NAMES) and name not in _ENV_SKIPPED:
            if any(w in name.upper() for w in _SECRET):
                lines.append(f"env {name} (set)")
            else:
                lines.append(f"env {name}={redact(os.environ[name])}")
    text = "\n".join(lines)
    # the store redacts what it writes (core/cache.py): a key it would change could never be read back
    return None if "\0" in text or redact(text) != text else text


def stamp(path: str) -> str:
    """The file's identity as every cache of sparkenv compares it (cache.stat_key: size, mtime,
    ctime, inode), as text; `-` when it cannot be stat'ed (absent)."""
    key = stat_key(path)
    return "-" if key is None else ":".join(map(str, key))


def own_files() -> list[str]:
    """sparkenv's data files uv's command is computed from: the shipped profiles, the platform levels,
    the Unsloth family."""
    names = [str(_DATA / "toolchain.toml"), str(_DATA / "packages.toml")]
    with contextlib.suppress(OSError):
        names += sorted(str(p) for p in (_DATA / "profiles").iterdir())
    return names


class Early:
    """uv started from a cached command, in a work folder of its own, until the lock claims it (its own
    command was the same) or discards it (stopped, folder removed)."""

    def __init__(self, work: Path, running: Running, argv: list[str], files: dict[str, str]) -> None:
        self.work, self.running, self.argv, self.files = work, running, argv, files
        self.claimed = False

    def matches(self, argv: list[str], files: dict[str, str], netrc: bool) -> bool:
        return not netrc and argv == self.argv and files == self.files

    def claim(self, stage: Any, errors: Any) -> Running:
        """The lock takes this uv over (its work folder too): its errors are read as the lock's own uv's
        (`errors`: lock/uvdriver.py error) and name the lock's own stage."""
        self.claimed = True
        self.running.stage, self.running.errors = stage, errors
        return self.running

    def discard(self) -> bool:
        """Kill uv (unless claimed) and remove its folder; whether uv was still running."""
        if self.claimed:
            return False
        self.claimed = True
        killed = self.running.stop()
        import shutil

        shutil.rmtree(self.work, ignore_errors=True)
        return killed

    def interrupted(self) -> None:
        """Stopped by Ctrl-C or a signal before the lock claimed uv: the closing line says what went."""
        if self.claimed:
            return
        from sparkenv.core import signals

        pid = self.running.proc.pid
        if self.discard():
            signals.cleaned(f"killed uv (process group {pid})")
        signals.cleaned(f"removed {self.work}")
        signals.cleaned("no lock written")


def start(key_text: str | None, timeout: float) -> Early | None:
    """uv spawned from the entry of `key_text`, when there is one, sound, and every file it was computed
    from is as it was; None otherwise (the lock then starts uv itself, later)."""
    if key_text is None:
        return None
    found = _read(key_text)
    if found is None:
        return None
    argv, files = found
    work: Path | None = None
    running = None
    try:
        work = work_folder()
        argv = [a.replace(_WORK, str(work)) for a in argv]
        files = {n: t.replace(_WORK, str(work)) for n, t in files.items()}
        for name, text in files.items():
            with open(work / name, "x", encoding="utf-8") as fh:
                fh.write(text)
        from sparkenv.lock.uv_process import environment

        out = work / _output(argv)
        running = Running(_Named(Path(argv[3]).stem), argv, out, timeout, environment(None, True), True)
        early = Early(work, running, argv, files)
        timeline.mark("uv spawned from the spawn cache")
        return early
    except BaseException as exc:  # an error, Ctrl-C or a signal: nothing of the early start is left behind
        from sparkenv.core import signals
        from sparkenv.core.errors import SparkenvError

        early = Early(work, running, argv, files) if work is not None and running is not None else None
        if isinstance(exc, KeyboardInterrupt):
            if early is not None:
                early.interrupted()
            if work is not None:
                signals.cleaned(f"removed {work}")
            signals.cleaned("no lock written")
        if early is not None:
            early.discard()
        if work is not None:
            import shutil

            shutil.rmtree(work, ignore_errors=True)
        if isinstance(exc, (OSError, SparkenvError)):
            return None  # never fails the lock: it starts uv itself, and says why if it cannot
        raise


def _output(argv: list[str]) -> str:
    return Path(argv[argv.index("--output-file") + 1]).name


def work_folder() -> Path:
    """A new private folder for uv's files, sparkenv-lock-* in the temporary folder: made directly in
    tempfile's first choice ($TMPDIR, $TEMP, $TMP, /tmp) when it can be (tempfile's import, with random
    and shutil, costs more than the rest of a hit), else by tempfile's own search. It is marked with
    this process's identity (OWNER): a lock killed by SIGKILL leaves it behind, and a later lock removes
    it once that process is gone (`sweep`)."""
    base = os.environ.get("TMPDIR") or os.environ.get("TEMP") or os.environ.get("TMP") or "/tmp"
    for _ in range(4):
        path = Path(base) / f"{_PREFIX}{os.urandom(6).hex()}"
        try:
            os.mkdir(path, 0o700)
            return _marked(path)
        except FileExistsError:
            continue
        except OSError:
            break
    import tempfile

    return _marked(Path(tempfile.mkdtemp(prefix=_PREFIX)))


OWNER = ".sparkenv-owner"  # in a work folder: "PID STARTTIME PIDNAMESPACE" of the sparkenv that made it


def _pid_namespace() -> str:
    """Which pids /proc shows here: a lock in another container sharing this TMPDIR is not in /proc, and
    must not look dead."""
    try:
        return os.readlink("/proc/self/ns/pid")
    except OSError:
        return ""


def _marked(path: Path) -> Path:
    from sparkenv.core import children

    me = children.identity()
    namespace = _pid_namespace()
    if me is not None and namespace:
        with contextlib.suppress(OSError):  # unmarked, it is never swept: only left behind, as before
            (path / OWNER).write_text(f"{me} {namespace}\n", encoding="ascii")
    return path


def sweep(base: str | None = None) -> list[Path]:
    """Remove the work folders (and uv's temporary files in them) that a killed lock left in the
    temporary folder: only sparkenv-lock-* folders of this user, marked by the sparkenv that made them,
    whose maker is no longer running — never an unmarked folder, another user's, or a live lock's.
    The folders removed."""
    import re
    import shutil
    import stat

    from sparkenv.core import children

    base = base or os.environ.get("TMPDIR") or os.environ.get("TEMP") or os.environ.get("TMP") or "/tmp"
    name = re.compile(re.escape(_PREFIX) + r"[0-9a-z_]+")
    namespace = _pid_namespace()
    removed: list[Path] = []
    if not namespace:
        return removed
    try:
        entries = list(os.scandir(base))
    except OSError:
        return removed
    for entry in entries:
        if not name.fullmatch(entry.name):
            continue
        try:
            st = entry.stat(follow_symlinks=False)
            if not stat.S_ISDIR(st.st_mode) or st.st_uid != os.getuid():
                continue
            mark = Path(entry.path) / OWNER
            mst = mark.lstat()
            if not stat.S_ISREG(mst.st_mode) or mst.st_uid != os.getuid() or mst.st_size > 128:
                continue
            owner = mark.read_text(encoding="ascii").split()
        except (OSError, UnicodeDecodeError):
            continue
        if len(owner) != 3 or owner[2] != namespace or children.alive(" ".join(owner[:2])):
            continue
        shutil.rmtree(entry.path, ignore_errors=True)
        removed.append(Path(entry.path))
    return removed


def sweep_later() -> None:
    """`sweep` in a thread of its own: the lock never waits for it (the process may end before it does;
    the next lock goes on)."""
    import threading

    threading.Thread(target=sweep, name="sparkenv-sweep", daemon=True).start()


def _read(key_text: str) -> tuple[list[str], dict[str, str]] | None:
    """The entry's command and files, or None: a miss of the store, another key's, or a file it depends
    on changed."""
    text = STORE.read(key_text)
    if text is None:
        return None
    fields = text.split("\0")
    try:
        if fields[0] != key_text:
            return None
        deps = int(fields[1])
        pairs = fields[2 : 2 + 2 * deps]
        if len(pairs) != 2 * deps or any(stamp(pairs[j]) != pairs[j + 1] for j in range(0, len(pairs), 2)):
            return None  # an input, the profile, the lock being replaced or uv changed: computed afresh
        i = 2 + 2 * deps
        n = int(fields[i])
        argv = fields[i + 1 : i + 1 + n]
        i += 1 + n
        m = int(fields[i])
        named = fields[i + 1 : i + 1 + 2 * m]
    except (ValueError, IndexError):
        return None
    if i + 1 + 2 * m != len(fields) or len(named) != 2 * m:
        return None
    files = dict(zip(named[0::2], named[1::2], strict=True))
    return (argv, files) if len(files) == m and _sound(argv, files, pairs[0::2]) else None


def _sound(argv: list[str], files: dict[str, str], stamped: list[str]) -> bool:
    """A `uv pip compile` of files in the work folder, uv itself stamped, plain file names."""
    return (
        len(argv) > 4
        and argv[1:3] == ["pip", "compile"]
        and argv[0] in stamped
        and argv[3].startswith(_WORK + "/")
        and "--output-file" in argv[:-1]
        and argv[argv.index("--output-file") + 1].startswith(_WORK + "/")
        and all(n and "/" not in n and n not in (".", "..") for n in files)
    )


class Cached:
    """A lock's place in the spawn cache: its key (None: its command line may not be cached), the uv
    started from its entry (if any), and the command to keep once the lock is written (`keep`)."""

    def __init__(self, key_text: str | None, early: Early | None) -> None:
        self.key, self.early = key_text, early
        self.kept: tuple[list[tuple[str, str]], Path, list[str], dict[str, str], Path, Any] | None = None

    def keep(
        self, deps: list[str], work: Path, argv: list[str], files: dict[str, str], lock: Path, upgrade: Any
    ) -> None:
        """The command uv was started with (`argv`, the `files` written into `work`), to store when the
        lock is done (`commit`), with the stamps its files have now (the lock being replaced: then)."""
        if self.key is None:
            return
        stamps = [(p, stamp(p)) for p in dict.fromkeys(os.path.abspath(d) for d in deps)]
        self.kept = (stamps, work, argv, files, lock, upgrade)

    def commit(self) -> None:
        """Store the kept command for the next lock of the same command line. A re-lock replaces the lock,
        and uv's preferences are the versions of the lock the next one replaces: those of the lock as it
        is now (written or not), stamped now. Never fails the lock: a cache that cannot be written is
        only a cache."""
        if self.key is None or self.kept is None:
            return
        from sparkenv.lock import preferences

        stamps, work, argv, files, lock, upgrade = self.kept
        where = os.path.abspath(lock)
        stamps = [(p, stamp(p) if p == where else s) for p, s in stamps]
        files = dict(files)
        out = _output(argv)
        kept = preferences.text(lock, upgrade)
        if kept is None:
            files.pop(out, None)
        else:
            files[out] = kept
        from sparkenv.core.errors import SparkenvError

        with contextlib.suppress(OSError, ValueError, SparkenvError):
            _store(self.key, stamps, work, argv, files)


def _store(
    key_text: str, stamps: list[tuple[str, str]], work: Path, argv: list[str], files: dict[str, str]
) -> None:
    """Never a credential: nothing is kept when the command or its files hold a URL's user-info."""
    from sparkenv.core.redact import redact

    folder = str(work)
    strings = [*argv, *files, *files.values()]
    deps = [x for pair in stamps for x in pair]
    if any("\0" in s or _WORK in s for s in [*strings, *deps]) or any(redact(s) != s for s in strings):
        return
    stored_argv = [a.replace(folder, _WORK) for a in argv]
    stored = [x for n, t in files.items() for x in (n, t.replace(folder, _WORK))]
    body = [key_text, str(len(stamps)), *deps, str(len(argv)), *stored_argv, str(len(files)), *stored]
    STORE.write(key_text, "\0".join(body))


def begin(fields: tuple[Any, ...], timeout: float) -> Cached:
    """The command's side of the cache, in one call: the early uv started from the command that `fields`
    (the command line's values) last ran, when an entry holds one, handed to the lock in a Cached; then
    the work folders a SIGKILLed lock left behind swept (on a thread: after uv's spawn, which it does not
    shape)."""
    key_text = key(fields)
    cached = Cached(key_text, None)
    cached.early = start(key_text, timeout)
    try:
        sweep_later()
    except BaseException as exc:  # a signal while the sweep's thread starts: the caller holds no Cached yet
        if cached.early is not None and isinstance(exc, KeyboardInterrupt):
            cached.early.interrupted()  # uv's group killed, its folder removed, the closing line says so
        elif cached.early is not None:
            cached.early.discard()
        raise
    return cached

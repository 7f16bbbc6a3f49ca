"""All-or-nothing output: every file a command writes (reports, JUnit, locks, facts dumps) goes through here.

`write_all({path: content, …})` first validates every path (its folder exists and is writable, it is not
a folder, not the same file twice, not a socket or device that would swallow or block), then writes each
content to a temporary beside its destination, and only when every temporary was written moves them all
into place. On any failure — a full disk, a bad path, Ctrl-C, SIGTERM — nothing was replaced and no
temporary is left. A reader never sees half a report, nor a new lock beside an old report.

A FIFO or character device that already exists (`--report /dev/stdout`, `--junit >(cat)`) is written in
place, before the files are moved: it cannot be renamed onto, and a FIFO nobody reads is refused, not
waited on.
"""

from __future__ import annotations

import contextlib
import errno
import os
import stat
from collections.abc import Iterable, Mapping

from sparkenv.core.errors import SparkenvError
from sparkenv.core.printable import printable
from sparkenv.core.redact import redact

PathLike = str | os.PathLike[str]


class OutputError(SparkenvError):
    """An output path that cannot be written: names it and why (exit 2)."""

    def __init__(self, path: PathLike, reason: str) -> None:
        self.path = os.fspath(path)
        self.reason = reason
        super().__init__(f"{printable(self.path) or repr(self.path)}: cannot write: {reason}")


class _Planned:
    # a plain class, not a dataclass: dataclasses (with inspect and ast) would be imported before a
    # re-lock's uv starts (benchmarks/README.md "Kept for start-up")
    __slots__ = ("data", "dest", "stream_fd", "tmp")

    def __init__(self, dest: str, data: bytes) -> None:
        self.dest, self.data = dest, data
        self.stream_fd: int | None = None  # an existing FIFO or character device, opened for writing
        self.tmp: str | None = None


def _umask() -> int:
    mask = os.umask(0o022)
    os.umask(mask)
    return mask


def _plan(path: PathLike, make_parents: bool) -> _Planned:
    dest = os.fspath(path)
    if not dest:
        raise OutputError(dest, "empty file name")
    from sparkenv.core.safe_read import check_length

    check_length(dest, printable(dest))
    if dest.endswith(os.sep) or os.path.isdir(dest):
        raise OutputError(dest, "is a directory; give a file name")
    folder = os.path.dirname(os.path.abspath(dest))
    if make_parents:
        try:
            os.makedirs(folder, exist_ok=True)
        except OSError as exc:
            raise OutputError(dest, f"cannot create folder {printable(folder)}: {exc.strerror}") from None
    if not os.path.exists(folder):
        raise OutputError(dest, f"folder {printable(folder)} does not exist")
    if not os.path.isdir(folder):
        raise OutputError(dest, f"{printable(folder)} is not a folder")
    if not os.access(folder, os.W_OK | os.X_OK):
        raise OutputError(dest, f"permission denied in folder {printable(folder)}")
    planned = _Planned(dest, b"")
    try:
        st = os.stat(dest)
    except FileNotFoundError:
        return planned
    except OSError as exc:
        raise OutputError(dest, exc.strerror or str(exc)) from None
    if stat.S_ISREG(st.st_mode):
        if not os.access(dest, os.W_OK):
            raise OutputError(dest, "permission denied (the file is read-only)")
        return planned
    if stat.S_ISFIFO(st.st_mode) or stat.S_ISCHR(st.st_mode):
        try:
            planned.stream_fd = os.open(dest, os.O_WRONLY | os.O_NONBLOCK | getattr(os, "O_CLOEXEC", 0))
        except OSError as exc:
            if exc.errno == errno.ENXIO:
                raise OutputError(dest, "a FIFO that no process reads") from None
            raise OutputError(dest, exc.strerror or str(exc)) from None
        os.set_blocking(planned.stream_fd, True)
        return planned
    raise OutputError(dest, "not a regular file (a socket or block device)")


def check_folder(folder: PathLike, option: str) -> None:
    """An output folder (`--output-dir`), checked before long work: it is a folder or can be made one
    (its nearest existing parent is a writable folder). SparkenvError naming the option otherwise."""
    from sparkenv.core.safe_read import check_length

    check_length(folder, option)
    path = os.path.abspath(os.fspath(folder))
    real = os.path.realpath(path)
    # the file system's root and the kernel's own folders are no output folder: `--output-dir /` wrote
    # the lock into /, `--output-dir /dev` wrote beside the devices
    kernel = any(real == k or real.startswith(k + "/") for k in ("/dev", "/proc", "/sys"))
    if real == "/" or (kernel and not real.startswith("/dev/shm/") and real != "/dev/shm"):
        raise SparkenvError(f"{option} {printable(os.fspath(folder))}: not a folder for sparkenv's output")
    probe = path
    while not os.path.lexists(probe):
        probe = os.path.dirname(probe)
    try:
        st = os.stat(probe)
    except OSError as exc:
        raise SparkenvError(f"{option} {printable(os.fspath(folder))}: {exc.strerror or exc}") from None
    if not stat.S_ISDIR(st.st_mode):
        where = "" if probe == path else f" ({printable(probe)} is in the way)"
        raise SparkenvError(f"{option} {printable(os.fspath(folder))}: not a folder{where}")
    if not os.access(probe, os.W_OK | os.X_OK):
        raise SparkenvError(
            f"{option} {printable(os.fspath(folder))}: permission denied in {printable(probe)}"
        )


def check(paths: Iterable[PathLike | None], make_parents: bool = False) -> None:
    """Validate output paths before long work starts, so a typo does not cost a whole run."""
    planned: list[_Planned] = []
    try:
        planned = _plan_all([p for p in paths if p is not None], make_parents)
    finally:
        _close(planned)


def _plan_all(paths: list[PathLike], make_parents: bool) -> list[_Planned]:
    planned: list[_Planned] = []
    seen: dict[str, str] = {}
    try:
        for path in paths:
            real = os.path.realpath(os.fspath(path))
            if real in seen:
                raise OutputError(path, f"the same file as {printable(seen[real])}; give two different files")
            seen[real] = os.fspath(path)
            planned.append(_plan(path, make_parents))
    except BaseException:
        _close(planned)
        raise
    return planned


def _close(planned: list[_Planned]) -> None:
    for p in planned:
        if p.stream_fd is not None:
            with contextlib.suppress(OSError):
                os.close(p.stream_fd)
            p.stream_fd = None


def write_all(
    files: Mapping[PathLike, str | bytes] | Iterable[tuple[PathLike, str | bytes]], make_parents: bool = False
) -> None:
    """Write every file or none (see the module's docstring). Text is written as UTF-8. Pairs rather than
    a mapping let a path given twice (`--report x --junit x`) be refused instead of silently merged."""
    pairs = list(files.items()) if isinstance(files, Mapping) else list(files)
    planned = _plan_all([path for path, _ in pairs], make_parents)
    for p, (_, content) in zip(planned, pairs, strict=True):
        # the last guard of "nothing sparkenv writes holds a credential": every text file it writes
        p.data = redact(content).encode("utf-8") if isinstance(content, str) else content
    mode = 0o666 & ~_umask()
    try:
        for p in planned:
            if p.stream_fd is None:
                p.tmp = _write_temporary(p, mode)
        # Streams before renames: a stream can still fail (a full disk behind /dev/stdout, a reader gone),
        # a rename within one folder practically cannot; so no file is replaced when a stream fails.
        for p in planned:
            if p.stream_fd is not None:
                _write_stream(p)
        for p in planned:  # every temporary is complete: now move them in
            if p.tmp is not None:
                try:
                    os.replace(p.tmp, p.dest)
                except OSError as exc:
                    raise _failed(p.dest, exc) from None
                p.tmp = None
    finally:
        for p in planned:
            if p.tmp is not None:
                with contextlib.suppress(OSError):
                    os.unlink(p.tmp)
        _close(planned)


def _write_temporary(p: _Planned, mode: int) -> str:
    import tempfile  # here, not at the top: the gate imports this module at every start

    folder, name = os.path.split(os.path.abspath(p.dest))
    try:
        fd, tmp = tempfile.mkstemp(prefix=f".{name[:200]}.", suffix=".tmp", dir=folder)
    except OSError as exc:
        raise _failed(p.dest, exc) from None
    try:
        with os.fdopen(fd, "wb") as fh:
            try:
                existing = os.stat(p.dest).st_mode & 0o7777
            except OSError:
                existing = mode
            os.fchmod(fh.fileno(), existing)
            fh.write(p.data)
    except BaseException as exc:
        with contextlib.suppress(OSError):
            os.unlink(tmp)
        if isinstance(exc, OSError):
            raise _failed(p.dest, exc) from None
        raise
    return tmp


def _write_stream(p: _Planned) -> None:
    assert p.stream_fd is not None
    view = memoryview(p.data)
    try:
        while view:
            view = view[os.write(p.stream_fd, view) :]
    except OSError as exc:
        raise _failed(p.dest, exc) from None


def _failed(dest: str, exc: OSError) -> SparkenvError:
    """A write that failed: a full device, quota or file size limit is the device's fault (exit 3,
    errors.os_fault), anything else an output that cannot be (exit 2)."""
    from sparkenv.core.errors import os_fault

    return os_fault(exc, dest) or OutputError(dest, exc.strerror or str(exc))


def write_one(path: PathLike, content: str | bytes, make_parents: bool = False) -> None:
    write_all({path: content}, make_parents)


def holds(path: PathLike, content: str | bytes) -> bool:
    """Whether `path` is a writable regular file (not a link) whose bytes are already those write_all
    would write of `content` (redacted, UTF-8): writing it again would change only its times. A caller
    that re-writes what it wrote last time (a re-lock's unchanged files, a cache entry) leaves it as is."""
    data = redact(content).encode("utf-8") if isinstance(content, str) else content
    try:
        st = os.lstat(path)
        if not stat.S_ISREG(st.st_mode) or st.st_size != len(data) or not os.access(path, os.W_OK):
            return False
        fd = os.open(path, os.O_RDONLY | getattr(os, "O_NOFOLLOW", 0) | getattr(os, "O_CLOEXEC", 0))
        with os.fdopen(fd, "rb") as fh:
            return fh.read(len(data) + 1) == data
    except OSError:
        return False


__all__ = ["OutputError", "check", "holds", "write_all", "write_one"]

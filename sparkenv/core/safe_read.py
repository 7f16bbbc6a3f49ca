"""The one way sparkenv reads a file a user (or a stranger's environment or lock) handed it.

A user-supplied path can be anything: a FIFO that never delivers (a plain open() blocks forever), a
symlink to /dev/zero (read() fills memory), a 10 GB file, a symlink loop, bytes that are not UTF-8. Every
such read goes through `read_bytes` / `read_text`: regular files only, a size cap, a non-blocking open, and
on failure an `UnreadableFile` whose message names the file and the real cause — a symlink loop is not
"no such file", /dev/null is not "permission denied".

`UnreadableFile` is a SparkenvError (exit 2, one line) for inputs that end a command; readers that carry
on with an ERROR line use its `reason`.
"""

from __future__ import annotations

import contextlib
import errno
import os
import stat

from sparkenv.core.errors import SparkenvError
from sparkenv.core.printable import printable

MiB = 1 << 20
# Big enough for any real metadata file (torch's RECORD is ~2 MiB, a CUDA venv's largest ~6 MiB), small
# enough that a hostile file cannot exhaust memory.
DEFAULT_LIMIT = 64 * MiB

_OPEN_FLAGS = os.O_RDONLY | os.O_NONBLOCK | getattr(os, "O_CLOEXEC", 0) | getattr(os, "O_NOCTTY", 0)

_KINDS = (
    (stat.S_ISDIR, "a directory"),
    (stat.S_ISFIFO, "a FIFO (named pipe)"),
    (stat.S_ISCHR, "a character device"),
    (stat.S_ISBLK, "a block device"),
    (stat.S_ISSOCK, "a socket"),
)


class UnreadableFile(SparkenvError):
    """A user-supplied file that cannot be read as one: names the file and why."""

    def __init__(self, path: str | os.PathLike[str], reason: str) -> None:
        self.path = os.fspath(path)
        self.reason = reason
        super().__init__(f"{printable(self.path)}: {reason}")


def kind_of(mode: int) -> str | None:
    """What a non-regular file is, in words; None for a regular file."""
    for test, words in _KINDS:
        if test(mode):
            return words
    return None if stat.S_ISREG(mode) else "not a regular file"


def _not_regular(path: str, mode: int, what: str) -> UnreadableFile:
    target = ""
    if os.path.islink(path):
        with contextlib.suppress(OSError):
            target = f" (a symlink to {printable(os.readlink(path))})"
    return UnreadableFile(path, f"{kind_of(mode)}{target}, not a regular file; expected {what}")


def stat_target(path: str | os.PathLike[str]) -> os.stat_result:
    """os.stat of a path a user named, or UnreadableFile with the real cause (a symlink loop is not
    "no such file", a broken symlink names where it points)."""
    try:
        return os.stat(path)
    except OSError as exc:
        raise _open_error(os.fspath(path), exc) from None


def _open_error(path: str, exc: OSError) -> UnreadableFile:
    code = exc.errno
    if code == errno.ENOENT:
        if os.path.islink(path):
            try:
                to = printable(os.readlink(path))
            except OSError:
                to = "?"
            return UnreadableFile(path, f"broken symlink (points to {to}, which does not exist)")
        return UnreadableFile(path, "no such file")
    if code == errno.ELOOP:
        return UnreadableFile(path, "symlink loop (too many levels of symbolic links)")
    if code == errno.EACCES or code == errno.EPERM:
        return UnreadableFile(path, "permission denied")
    if code == errno.ENOTDIR:
        return UnreadableFile(path, "a part of the path is not a directory")
    if code == errno.ENAMETOOLONG:
        return UnreadableFile(path, "file name too long")
    return UnreadableFile(path, f"cannot read: {exc.strerror or exc}")


def _size(n: int) -> str:
    return f"{n / MiB:.1f} MiB" if n >= MiB else f"{n} bytes"


def read_bytes(path: str | os.PathLike[str], *, what: str = "a file", limit: int = DEFAULT_LIMIT) -> bytes:
    """The whole content of a regular file of at most `limit` bytes, or UnreadableFile.

    `what` says what was expected ("a METADATA file", "a lock"), for the message.
    """
    p = os.fspath(path)
    # stat before open: opening a device can have effects (a tape rewinds, a tty becomes controlling).
    st = _regular_stat(p, what)
    try:
        fd = os.open(p, _OPEN_FLAGS)
    except OSError as exc:
        raise _open_error(p, exc) from None
    try:
        st = os.fstat(fd)  # the path may have been swapped between stat and open
        if not stat.S_ISREG(st.st_mode):
            raise _not_regular(p, st.st_mode, what)
        if st.st_size > limit:
            raise UnreadableFile(p, f"{_size(st.st_size)}, over the {_size(limit)} limit for {what}")
        # Read to EOF, not st_size: /proc files say 0, and a growing file must still stop at the cap.
        return _read_capped(fd, p, what, limit)
    finally:
        os.close(fd)


def _read_capped(fd: int, name: str, what: str, limit: int) -> bytes:
    """`fd` read to its end, never past `limit`; UnreadableFile naming `name` otherwise."""
    chunks: list[bytes] = []
    got = 0
    while True:
        try:
            chunk = os.read(fd, min(limit + 1 - got, 4 * MiB) or 1)
        except OSError as exc:
            raise UnreadableFile(name, f"read failed: {exc.strerror or exc}") from None
        if not chunk:
            return b"".join(chunks)
        chunks.append(chunk)
        got += len(chunk)
        if got > limit:
            raise UnreadableFile(name, f"over the {_size(limit)} limit for {what}")


def read_text(
    path: str | os.PathLike[str],
    *,
    what: str = "a file",
    limit: int = DEFAULT_LIMIT,
    errors: str = "strict",
) -> str:
    """`read_bytes` decoded as UTF-8. errors="strict" turns bad bytes into UnreadableFile naming the
    offset; "replace" is for files read only for hints (metadata of other people's packages)."""
    return _decoded(read_bytes(path, what=what, limit=limit), path, what, errors)


def _decoded(data: bytes, path: str | os.PathLike[str], what: str, errors: str) -> str:
    try:
        return data.decode("utf-8", errors=errors)
    except UnicodeDecodeError as exc:
        line = data.count(b"\n", 0, exc.start) + 1
        raise UnreadableFile(
            os.fspath(path), f"not UTF-8 text (byte 0x{data[exc.start]:02x} on line {line}); expected {what}"
        ) from None


STDIN = "<stdin>"  # how standard input is named in every message
STDIN_ARG = "-"  # an INPUT read from standard input (`cat requirements.txt | sparkenv check -`)


def read_stdin(*, what: str = "a file", limit: int = DEFAULT_LIMIT) -> str:
    """Standard input (`-` on a command line) as UTF-8 text, read to its end but never past `limit`;
    UnreadableFile naming "<stdin>" otherwise. A terminal is refused rather than waited on: `sparkenv check
    -` typed without a pipe would sit there until Ctrl-D."""
    try:
        if os.isatty(0):
            raise UnreadableFile(STDIN, f"a terminal; pipe {what} in (`cat FILE | sparkenv ... -`)")
        mode = os.fstat(0).st_mode
    except OSError as exc:  # stdin closed (`<&-`)
        raise UnreadableFile(STDIN, f"cannot read: {exc.strerror or exc}") from None
    if stat.S_ISDIR(mode):
        raise UnreadableFile(STDIN, f"a directory; expected {what}")
    # blocking reads: a pipe's writer may be slow, and it ends the input by closing
    return _decoded(_read_capped(0, STDIN, what, limit), STDIN, what, "strict")


# Linux's limits (limits.h): a longer path or name fails every call with ENAMETOOLONG
NAME_MAX = 255
PATH_MAX = 4096


def check_length(path: str | os.PathLike[str], what: str) -> None:
    """SparkenvError naming `what` (an option, a key) when `path` cannot name a file on Linux: a name
    over NAME_MAX bytes or a path over PATH_MAX. Checked before a path is used, so ENAMETOOLONG is never
    met halfway through a command (after uv ran, at the write of a lock)."""
    raw = os.fsencode(path)
    longest = max((len(part) for part in raw.split(b"/")), default=0)
    if longest > NAME_MAX:
        raise SparkenvError(f"{what}: file name too long (a name of {longest} bytes; at most {NAME_MAX})")
    if len(raw) >= PATH_MAX:
        raise SparkenvError(
            f"{what}: file name too long (a path of {len(raw)} bytes; at most {PATH_MAX - 1})"
        )


def require_regular(path: str | os.PathLike[str], *, what: str = "a file") -> None:
    """UnreadableFile unless `path` is (a symlink to) a regular file; for inputs a library opens itself."""
    _regular_stat(os.fspath(path), what)


def _regular_stat(p: str, what: str) -> os.stat_result:
    """The stat of `p`, a (symlink to a) regular file, or UnreadableFile saying what it is instead."""
    try:
        st = os.stat(p)
    except OSError as exc:
        raise _open_error(p, exc) from None
    if not stat.S_ISREG(st.st_mode):
        raise _not_regular(p, st.st_mode, what)
    return st

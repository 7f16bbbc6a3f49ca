"""Where sparkenv keeps what it can fetch or build again: $SPARKENV_CACHE_DIR, else $XDG_CACHE_HOME/sparkenv,
else ~/.cache/sparkenv (`sparkenv cache dir` prints it, `sparkenv cache clean` empties it). One place
decides, and says clearly when that place cannot be used (an XDG_CACHE_HOME that is a file ended in an
internal error)."""

from __future__ import annotations

import contextlib
import os
import sys
from pathlib import Path
from typing import Any

from sparkenv.core.errors import SparkenvError
from sparkenv.core.printable import printable


def root() -> Path:
    if os.environ.get("SPARKENV_CACHE_DIR"):
        return Path(os.environ["SPARKENV_CACHE_DIR"])
    base = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(base) / "sparkenv"


def _source() -> str:
    if os.environ.get("SPARKENV_CACHE_DIR"):
        return "$SPARKENV_CACHE_DIR"
    return "$XDG_CACHE_HOME" if os.environ.get("XDG_CACHE_HOME") else "~/.cache"


TAG = "CACHEDIR.TAG"
# https://bford.info/cachedir/: backup tools skip the folder; `sparkenv cache clean` empties only a
# folder that holds this tag or is named sparkenv (a SPARKENV_CACHE_DIR pointed at $HOME is never emptied)
TAG_TEXT = (
    "Signature: 8a477f597d28d172789f06886806bc55\n"
    "# This file is a cache directory tag created by sparkenv (sparkenv cache dir|clean).\n"
)


def folder(*parts: str) -> Path:
    """root()/parts…, created (the root with its CACHEDIR.TAG); SparkenvError (exit 2) naming the setting
    when it cannot be."""
    path = root().joinpath(*parts)
    try:
        if not path.is_dir():
            path.mkdir(parents=True, exist_ok=True)
            tag = root() / TAG
            if not tag.exists():
                tag.write_text(TAG_TEXT, encoding="utf-8")
    except OSError as exc:
        blocker = next((p for p in (path, *path.parents) if _is_file(p)), None)
        why = f"{printable(str(blocker))} is a file, not a folder" if blocker else exc.strerror
        raise SparkenvError(
            f"cannot use the cache folder {printable(str(path))} ({_source()}): {why}; point "
            "SPARKENV_CACHE_DIR or XDG_CACHE_HOME at a writable folder"
        ) from None
    return path


def _is_file(path: Path) -> bool:
    """Something other than a folder is there; False when it cannot even be looked at (a parent
    folder of mode 700 owned by another user: the error is then the permission, said as such)."""
    try:
        return path.exists() and not path.is_dir()
    except OSError:
        return False


def owned(path: Path) -> bool:
    """Whether `path` is a cache folder sparkenv may empty: it holds sparkenv's CACHEDIR.TAG, or is the
    default folder's name (a cache made before the tag)."""
    try:
        return (path / TAG).read_text(encoding="utf-8", errors="replace").startswith(
            TAG_TEXT.splitlines()[0]
        ) or (path.name == "sparkenv")
    except OSError:
        return path.name == "sparkenv"


def stat_key(path: str) -> list[int] | None:
    """A file's identity as every cache compares it: size, mtime_ns, ctime_ns, inode. A write, a
    replacement, a `touch` or a copy over it changes one of them, and no user can set the ctime back;
    None when the file cannot be stat'ed."""
    try:
        st = os.stat(path)
    except (OSError, ValueError):
        return None
    return [st.st_size, st.st_mtime_ns, st.st_ctime_ns, st.st_ino]


_SAFE = frozenset("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789._-")
_READ_FLAGS = os.O_RDONLY | os.O_NONBLOCK | os.O_NOFOLLOW | getattr(os, "O_CLOEXEC", 0)


class Store:
    """One named cache: its entries are files under root()/NAME/, each one line `NAME VERSION CRC32`
    before its text. The one rule of every cache: an entry is used only when that line names this store,
    this version and the text's checksum, and the file is a regular one this user owns and nobody else
    may write, within `limit`; anything else (absent, damaged, truncated, another version's, a FIFO in
    its place) is a miss that the next write replaces. What an entry depends on is in its key or its
    VERSION (a caller bumps it when what it keeps changes). Never fatal: a cache that cannot be read or
    written only costs time."""

    def __init__(self, name: str, version: str, limit: int = 64 << 20) -> None:
        self.name, self.version, self.limit = name, version, limit

    def path(self, key: str) -> Path:
        """The entry's file: the key itself when it is a plain file name, else two checksums of it (zlib:
        no hashlib before a re-lock's uv starts), and a caller whose keys are not file names keeps the key
        in the entry and compares it."""
        if not (0 < len(key) <= 128 and set(key) <= _SAFE and key[0] != "."):
            import zlib

            data = key.encode("utf-8", "surrogateescape")
            key = f"{zlib.crc32(data):08x}{zlib.adler32(data):08x}"
        return root() / self.name / key

    def _head(self, body: bytes) -> bytes:
        import zlib

        return f"{self.name} {self.version} {zlib.crc32(body):08x}\n".encode()

    def read(self, key: str) -> str | None:
        path = self.path(key)
        filing = sys.modules.get("sparkenv.core.filing")  # not imported: nothing was queued
        queued = filing.kept(path) if filing is not None else None  # queued in this process, made or not
        data = queued.encode("utf-8", "surrogateescape") if queued is not None else self._bytes(path)
        if data is None:
            return None
        head, sep, body = data.partition(b"\n")
        if not sep or head + sep != self._head(body):
            return None
        return body.decode("utf-8", "surrogateescape")

    def _bytes(self, path: Path) -> bytes | None:
        import stat

        try:
            fd = os.open(path, _READ_FLAGS)
        except OSError:
            return None
        try:
            st = os.fstat(fd)
            if not stat.S_ISREG(st.st_mode) or st.st_uid != os.getuid() or st.st_mode & 0o022:
                return None
            with os.fdopen(fd, "rb", closefd=False) as fh:
                data = fh.read(self.limit + 1)
            return data if len(data) <= self.limit else None
        except OSError:
            return None
        finally:
            os.close(fd)

    def write(self, key: str, text: str, behind: bool = False) -> None:
        """Atomically (core/outputs.py), redacted first (core/redact.py: no credential is ever kept);
        `behind`: on the filing thread (core/filing.py)."""
        from sparkenv.core import filing, outputs
        from sparkenv.core.redact import redact

        body = redact(text).encode("utf-8", "surrogateescape")
        path, data = self.path(key), self._head(body) + body
        if behind:
            filing.later(path, data.decode("utf-8", "surrogateescape"))
            return
        try:
            folder(self.name)
            if not outputs.holds(path, data):  # as it was: not written again
                with contextlib.suppress(FileExistsError):  # made 0600, a mode the writer keeps, whatever
                    os.close(os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600))  # the umask
                outputs.write_one(path, data)
        except (OSError, SparkenvError):
            pass

    def load(self, key: str) -> Any:
        """The JSON value kept under `key`; None on a miss."""
        import json  # here: a re-lock reads its spawn entry before uv starts, without JSON

        text = self.read(key)
        try:
            return None if text is None else json.loads(text)
        except (ValueError, RecursionError):
            return None

    def save(self, key: str, value: Any, behind: bool = False) -> None:
        import json

        try:
            text = json.dumps(value, separators=(",", ":"), allow_nan=False)
        except (ValueError, TypeError):
            return
        self.write(key, text, behind)

"""How the gate reads a file it did not write: regular files only, opened non-blocking, with a size cap.

A FIFO named by $ACCELERATE_CONFIG_FILE or `--facts`, a METADATA that is a pipe, a symlink to /dev/zero:
a plain open() blocks or fills memory, and the gate's deadline is a promise. This is the interface the
gate uses; it delegates to sparkenv.safe_read (the one safe-read helper of issue 11) where that exists,
and until then to the minimal copy below, which keeps the same contract.
"""

from __future__ import annotations

import os
import stat

from sparkenv.errors import SparkenvError

try:  # issue 11's helper: the one implementation once it is on main
    from sparkenv.safe_read import UnreadableFile, read_bytes  # type: ignore[import-not-found]
except ImportError:  # pragma: no cover - removed when sparkenv.safe_read lands

    class UnreadableFile(SparkenvError):  # type: ignore[no-redef]
        def __init__(self, path: str | os.PathLike[str], reason: str) -> None:
            self.path = os.fspath(path)
            self.reason = reason
            super().__init__(f"{self.path}: {reason}")

    def read_bytes(path: str | os.PathLike[str], *, what: str = "a file", limit: int = 64 << 20) -> bytes:  # type: ignore[no-redef]
        p = os.fspath(path)
        try:
            fd = os.open(p, os.O_RDONLY | os.O_NONBLOCK | os.O_CLOEXEC | os.O_NOCTTY)
        except FileNotFoundError:
            raise UnreadableFile(p, "no such file") from None
        except OSError as exc:
            raise UnreadableFile(p, f"cannot read: {exc.strerror or exc}") from None
        try:
            st = os.fstat(fd)
            if not stat.S_ISREG(st.st_mode):
                raise UnreadableFile(p, f"not a regular file; expected {what}")
            if st.st_size > limit:
                raise UnreadableFile(p, f"{st.st_size} bytes, over the {limit} byte limit for {what}")
            chunks, got = [], 0
            while chunk := os.read(fd, min(limit + 1 - got, 1 << 22) or 1):
                chunks.append(chunk)
                got += len(chunk)
                if got > limit:
                    raise UnreadableFile(p, f"over the {limit} byte limit for {what}")
            return b"".join(chunks)
        finally:
            os.close(fd)


def read_text(path: str | os.PathLike[str], *, what: str, limit: int) -> str:
    """Text of a file someone else wrote: bad bytes replaced (it is read for facts, not executed)."""
    return read_bytes(path, what=what, limit=limit).decode("utf-8", errors="replace")


__all__ = ["UnreadableFile", "read_bytes", "read_text"]

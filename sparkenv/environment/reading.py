"""How the gate reads a file it did not write: through sparkenv.core.safe_read (regular files only, opened
non-blocking, with a size cap), so a FIFO named by $ACCELERATE_CONFIG_FILE or `--facts`, a METADATA
that is a pipe, or a symlink to /dev/zero cannot break the gate's deadline."""

from __future__ import annotations

import os

from sparkenv.core.safe_read import UnreadableFile, read_bytes


def read_text(path: str | os.PathLike[str], *, what: str, limit: int) -> str:
    """Text of a file someone else wrote: bad bytes replaced (it is read for facts, not executed)."""
    return read_bytes(path, what=what, limit=limit).decode("utf-8", errors="replace")


__all__ = ["UnreadableFile", "read_bytes", "read_text"]

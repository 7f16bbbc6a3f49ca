"""What sparkenv read from a file's bytes, remembered per file in the cache folder (core/cache.py), so
that a start re-reads only the files that changed.

An entry belongs to one path and holds the file's stat key: size, mtime_ns, ctime_ns and inode. Any
write, replacement (a new inode), `touch` or copy over it changes one of them (ctime cannot be set back
by a user), so a changed file is always read again: a stale entry is never used. The file records which
reader wrote it; another reader's file is ignored. Never fatal: an unreadable, foreign or damaged cache
is just not used, and a cache that cannot be written is skipped."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

CACHE_LIMIT = 64 << 20  # a venv's kernels.json is ~1 MB


def stat_key(path: str) -> list[int] | None:
    """The file's identity as the cache compares it; None when it cannot be stat'ed."""
    try:
        st = os.stat(path)
    except (OSError, ValueError):
        return None
    return [st.st_size, st.st_mtime_ns, st.st_ctime_ns, st.st_ino]


class StatCache:
    def __init__(self, path: Path | None, reader: str) -> None:
        self.path, self.reader, self.entries, self.dirty = path, reader, {}, False
        if path is None:
            return
        from sparkenv.core import safe_read

        try:
            # through safe_read: a FIFO put in the cache's place must not hang a start, nor a huge file
            # fill memory; either is just a cache not used
            import json  # here, not at the top: a re-lock stamps files with stat_key before uv starts

            data = json.loads(safe_read.read_text(path, what="a cache file", limit=CACHE_LIMIT))
        except (safe_read.UnreadableFile, ValueError, RecursionError):
            return
        if isinstance(data, dict) and data.get("reader") == reader:
            entries = data.get("entries")
            self.entries = entries if isinstance(entries, dict) else {}

    @classmethod
    def in_cache_folder(cls, name: str, reader: str) -> StatCache:
        """The cache file `name` in the cache folder; an unusable folder gives a cache that keeps nothing."""
        from sparkenv.core import cache
        from sparkenv.core.errors import SparkenvError

        try:
            return cls(cache.folder() / name, reader)
        except SparkenvError:
            return cls(None, reader)

    def entry(self, path: str, key: list[int] | None) -> dict[str, Any] | None:
        """The entry of `path` when it was written for this very file (`key`), else None."""
        entry = self.entries.get(path)
        if key is None or not isinstance(entry, dict) or entry.get("key") != key:
            return None
        return entry

    def get(self, path: str, key: list[int] | None, slot: str) -> Any:
        entry = self.entry(path, key)
        return None if entry is None else entry.get(slot)

    def put(self, path: str, key: list[int] | None, slot: str, value: Any) -> None:
        if key is None or self.path is None:
            return
        entry = self.entry(path, key)
        if entry is None:
            entry = self.entries[path] = {"key": key}
        entry[slot] = value
        self.dirty = True

    def save(self) -> None:
        if self.path is None or not self.dirty:
            return
        # sparkenv's one atomic write, imported only when there is something to save (the gate's start)
        import json

        from sparkenv.core import outputs

        # entries of files that are gone (a removed venv, a test's temporary folder) are dropped
        self.entries = {p: e for p, e in self.entries.items() if os.path.exists(p)}
        try:
            outputs.write_one(self.path, json.dumps({"reader": self.reader, "entries": self.entries}))
            self.dirty = False
        except (OSError, outputs.OutputError):
            pass  # never fatal: an unwritable cache is just not kept

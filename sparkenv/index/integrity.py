"""A whole file read at lock, checked against the sha256 the index gives for it (its page's `#sha256=`,
PEP 691 `hashes`; the same digest uv writes into the lock). One check for every reader that reads a file
whole (index/remote_zip.py's download without range support and its sdist reads, lock/sdist_scan.py).

A file read by range requests is not checked: its bytes were never all seen, so nothing can be said of
them. A mismatch is kept here for the lock's judgement (rules/g9_resolved.py: a FAIL, so no lock is
written) and the read fails with the reason, so no cache files it as a good read.
"""

from __future__ import annotations

import hashlib
import threading
import urllib.parse
from dataclasses import dataclass
from typing import IO


@dataclass(frozen=True)
class HashMismatch:
    file: str  # the file's name (never its URL, which may hold a credential)
    url: str  # matched against the files of a lock; never shown
    expected: str
    actual: str


_found: dict[str, HashMismatch] = {}  # URL -> the mismatch its whole read found, in this process
_lock = threading.Lock()


def verify(fh: IO[bytes], url: str, expected: str) -> str | None:
    """The whole file read from `url` (spooled in `fh`, left at its start) against the index's sha256:
    None when they match (or the index gave none); else the mismatch is kept and its one-line reason
    returned."""
    fh.seek(0)
    if not expected:
        return None
    digest = hashlib.sha256()
    while chunk := fh.read(1 << 20):
        digest.update(chunk)
    fh.seek(0)
    actual, expected = digest.hexdigest(), expected.lower()
    if actual == expected:
        return None
    name = urllib.parse.unquote(url.split("#", 1)[0].split("?", 1)[0].rsplit("/", 1)[-1])
    with _lock:
        _found[url] = HashMismatch(name, url, expected, actual)
    return f"its bytes have sha256 {actual[:12]}…, the index gives {expected[:12]}…"


def found(urls: set[str]) -> tuple[HashMismatch, ...]:
    """The mismatches found reading any of `urls` (the files a lock holds), by file name."""
    with _lock:
        return tuple(sorted((m for u, m in _found.items() if u in urls), key=lambda m: m.file))

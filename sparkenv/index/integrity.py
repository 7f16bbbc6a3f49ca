"""A whole file read at lock, checked against the sha256 the index gives for it (its page's `#sha256=`,
PEP 691 `hashes`; the same digest uv writes into the lock). One check for every reader that reads a file
whole (index/remote_zip.py's download without range support and its sdist reads, lock/sdist_scan.py).

A file read by range requests is not checked: its bytes were never all seen, so nothing can be said of
them. A mismatch is kept here for the lock's judgement (rules/g9_resolved.py: a FAIL, so no lock is
written) and the read fails with the reason, so no cache files it as a good read. A read made before the
sha256 was known (lock/early.py reads by URL while uv resolves) is checked when the lock names it, before
its answer is filed under that sha256.
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
_read_whole: dict[str, str] = {}  # URL -> the sha256 of the bytes a whole read of it saw
_lock = threading.Lock()


def verify(fh: IO[bytes], url: str, expected: str) -> str | None:
    """The whole file read from `url` (spooled in `fh`, left at its start), its digest kept for a check
    once its sha256 is known (`mismatch`: an early read has only the URL): against the index's sha256,
    None when they match (or none is given yet); else the one-line reason."""
    fh.seek(0)
    digest = hashlib.sha256()
    while chunk := fh.read(1 << 20):
        digest.update(chunk)
    fh.seek(0)
    with _lock:
        _read_whole[url] = digest.hexdigest()
    return mismatch(url, expected)


def mismatch(url: str, expected: str) -> str | None:
    """Why the bytes a whole read of `url` saw are not those the index's sha256 `expected` names (the
    mismatch kept for the lock's judgement); None when they are, or when nothing read it whole."""
    with _lock:
        actual = _read_whole.get(url)
        if not expected or actual is None or actual == expected.lower():
            return None
        name = urllib.parse.unquote(url.split("#", 1)[0].split("?", 1)[0].rsplit("/", 1)[-1])
        _found[url] = HashMismatch(name, url, expected.lower(), actual)
    return f"its bytes have sha256 {actual[:12]}…, the index gives {expected[:12]}…"


def found(urls: set[str]) -> tuple[HashMismatch, ...]:
    """The mismatches found reading any of `urls` (the files a lock holds), by file name."""
    with _lock:
        return tuple(sorted((m for u, m in _found.items() if u in urls), key=lambda m: m.file))

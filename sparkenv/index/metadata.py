"""The core metadata (Requires-Dist …) of every locked file, or the reason it could not be read.

Sources, cheapest first: sparkenv's cache (keyed by the file's sha256: content-addressed, never stale);
the index's PEP 658 `.metadata` file; the wheel's own `*.dist-info/METADATA`, read by range requests
through its zip central directory wherever it is (ZIP64 included), or by a full download when the
server has no range support; an sdist's PKG-INFO. Fetched concurrently. A file that gives nothing is
returned with its reason, and the caller reports it: never silence.
"""

from __future__ import annotations

import urllib.error
import urllib.request
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from email.parser import HeaderParser

from packaging.requirements import InvalidRequirement, Requirement

from sparkenv.core.cache import Store
from sparkenv.index import credentials, fetch, integrity, remote_zip


@dataclass(frozen=True)
class FileRef:
    """One file the lock pins: what to read metadata from."""

    key: str  # normalized distribution name
    filename: str
    url: str
    sha256: str

    @property
    def is_wheel(self) -> bool:
        return self.filename.endswith(".whl")


@dataclass
class Metadata:
    requires: list[Requirement]
    via: str  # where it came from: cache, PEP 658, range requests, full download, sdist PKG-INFO
    invalid: list[str] = field(default_factory=list)  # Requires-Dist values packaging cannot parse


# core/cache.py's store of what was read of a file, by its sha256 and what was read (a suffix):
# content-addressed, never stale
STORE = Store("metadata", "1")


def store(sha256: str, text: str, suffix: str = ".metadata", behind: bool = False) -> None:
    """Keep `text` by the file's sha256; `behind`: on the filing thread (core/filing.py), as a lock files
    after uv's exit what it read early."""
    STORE.write(f"{sha256}{suffix}", text, behind)


def cached(sha256: str, suffix: str = ".metadata") -> str | None:
    """The text kept by the file's sha256 (queued in this process or on disk); None when there is none."""
    return STORE.read(f"{sha256}{suffix}")


def _pep658(ref: FileRef, timeout: float) -> str | None:
    """The index's `.metadata` file; None when it serves none. Its bytes are not hashed against the
    index page: what matters here is the wheel's own METADATA, which the PEP 658 file copies."""
    try:
        with fetch.urlopen(credentials.request(ref.url + ".metadata"), timeout) as resp:
            return resp.read().decode("utf-8", errors="replace")
    except (urllib.error.URLError, OSError, ValueError):
        return None


FROM_WHEEL = "the wheel's METADATA"

# URL -> (text, how), of files read before their sha256 was known (lock/early.py, from uv's cached
# page): taken by a read of the same URL, and filed then under the sha256 that read names
_BY_URL: dict[str, tuple[str, str]] = {}


def _text(ref: FileRef, timeout: float) -> tuple[str, str]:
    """(metadata text, how it was read); raises remote_zip.Unreadable. Cached by the file's sha256; by
    its URL for this process when no sha256 is given."""
    if ref.sha256:
        text = cached(ref.sha256)
        if text is not None:
            return text, "cache"
        early = _BY_URL.pop(ref.url, None)  # the bytes at the URL the lock names, read moments ago
        if early is not None and integrity.mismatch(ref.url, ref.sha256) is None:
            store(ref.sha256, early[0], behind=True)
            return early
    elif (early := _BY_URL.get(ref.url)) is not None:
        return early
    if ref.is_wheel:
        text = _pep658(ref, timeout)
        via = "PEP 658"
        if text is None:
            got = remote_zip.read_dist_info(ref.url, ref.filename, ("METADATA",), timeout, ref.sha256)
            if "METADATA" not in got:
                raise remote_zip.Unreadable("the wheel has no *.dist-info/METADATA")
            text, via = got["METADATA"].decode("utf-8", errors="replace"), FROM_WHEEL
    else:
        text = remote_zip.read_sdist_pkg_info(ref.url, ref.filename, timeout, sha256=ref.sha256).decode(
            "utf-8", errors="replace"
        )
        via = "the sdist's PKG-INFO"
    keep(ref, text, via)
    return text, via


def keep(ref: FileRef, text: str, via: str) -> None:
    """A file's metadata just read, for the reads that follow (unless kept already): by its sha256 in the
    cache, else by its URL for this process."""
    if ref.sha256:
        if cached(ref.sha256) is None:
            store(ref.sha256, text)
    else:
        _BY_URL.setdefault(ref.url, (text, via))


def parse(text: str, via: str) -> Metadata:
    msg = HeaderParser().parsestr(text)
    reqs, invalid = [], []
    for value in msg.get_all("Requires-Dist") or []:
        try:
            reqs.append(Requirement(value))
        except InvalidRequirement:
            invalid.append(value)
    return Metadata(reqs, via, invalid)


def read(
    refs: list[FileRef], timeout: float = 30.0, index_url: str | None = None
) -> dict[str, Metadata | str]:
    """key -> its metadata, or a one-line reason it could not be read. What uv cached while resolving
    (index/uv_cache.py) comes first: no second download of what uv fetched a moment before."""
    from sparkenv.index import uv_cache
    from sparkenv.index.default_index import is_installers_default

    if not refs:
        return {}
    pypi = is_installers_default(index_url)

    def local(ref: FileRef) -> Metadata | None:
        from_uv = uv_cache.requires(ref.filename, pypi)
        if from_uv is not None:
            return Metadata(from_uv, "uv's cache")
        text = cached(ref.sha256) if ref.sha256 else None
        return parse(text, "cache") if text is not None else None

    def one(ref: FileRef) -> tuple[str, Metadata | str]:
        try:
            text, via = _text(ref, timeout)
        except remote_zip.Unreadable as exc:
            return ref.key, str(exc)
        return ref.key, parse(text, via)

    # what uv or an earlier lock left on disk is read here, in order; threads only for the network
    found: dict[str, Metadata | str] = {}
    remote = []
    for ref in refs:
        hit = local(ref)
        if hit is None:
            remote.append(ref)
        else:
            found[ref.key] = hit
    if remote:
        with ThreadPoolExecutor(min(16, len(remote))) as pool:
            found.update(pool.map(one, remote))
    return {ref.key: found[ref.key] for ref in refs}


def records(refs: list[FileRef], timeout: float = 30.0) -> dict[str, str]:
    """key -> the wheel's RECORD text, or '' when it could not be read (cached like METADATA)."""

    def one(ref: FileRef) -> tuple[str, str]:
        kept = cached(ref.sha256, ".record") if ref.sha256 else None
        if kept is not None:
            return ref.key, kept
        try:
            got = remote_zip.read_dist_info(ref.url, ref.filename, ("RECORD",), timeout, sha256=ref.sha256)
        except remote_zip.Unreadable:
            return ref.key, ""
        text = got.get("RECORD", b"").decode("utf-8", errors="replace")
        if text and ref.sha256:
            store(ref.sha256, text, ".record")
        return ref.key, text

    if not refs:
        return {}
    with ThreadPoolExecutor(min(8, len(refs))) as pool:
        return dict(pool.map(one, refs))

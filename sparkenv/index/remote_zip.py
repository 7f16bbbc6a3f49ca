"""Read members of a remote wheel (zip) without downloading it: a seekable file over HTTP range requests.

Python's `zipfile` does the zip work (end-of-central-directory record wherever it is, ZIP64, central
directories of any size); this file only turns its seeks and reads into a few range requests, each
served from fetched blocks where it can. A server without range support answers 200 with the whole
file: then the whole file is read into a temporary file (capped), checked against the index's sha256
(index/integrity.py), and zipfile reads that instead.
"""

from __future__ import annotations

import io
import re
import shutil
import tempfile
import zipfile
import zlib
from typing import IO

from sparkenv.index import credentials, fetch, integrity

_CONTENT_RANGE = re.compile(r"bytes (\d+)-(\d+)/(\d+)")
# The EOCD record (22 bytes) sits after a comment of at most 65535 bytes; the ZIP64 locator (20) before it.
_TAIL = 22 + 65535 + 20
_MIN_BLOCK = 64 * 1024
# A full download only when the server leaves no choice; past this the file is reported unreadable.
FULL_DOWNLOAD_CAP = 4 * 1024**3


class Unreadable(Exception):
    """The file could not be read; the message says why (one line)."""


class NotHeld(OSError):
    """A read of bytes not fetched yet, while the file serves only what it holds (`RangeFile.held_only`)."""


class RangeFile(io.RawIOBase):
    """A read-only, seekable view of a remote file fetched by HTTP range requests."""

    def __init__(self, url: str, size: int, timeout: float, first: tuple[int, bytes]) -> None:
        self.url, self.size, self.timeout = url, size, timeout
        self._pos = 0
        self._blocks: list[tuple[int, bytes]] = [first]
        self.requests = 1
        self.held_only = False  # True: a read past the fetched bytes raises NotHeld instead of fetching

    def readable(self) -> bool:
        return True

    def seekable(self) -> bool:
        return True

    def tell(self) -> int:
        return self._pos

    def seek(self, offset: int, whence: int = io.SEEK_SET) -> int:
        base = {io.SEEK_SET: 0, io.SEEK_CUR: self._pos, io.SEEK_END: self.size}[whence]
        self._pos = max(0, base + offset)
        return self._pos

    def _cached(self, start: int, end: int) -> bytes | None:
        for off, data in self._blocks:
            if off <= start and end <= off + len(data):
                return data[start - off : end - off]
        return None

    def _held_from(self, start: int, end: int) -> bytes:
        """The fetched bytes from `start` on, up to `end` (a short read); NotHeld when none are."""
        for off, data in self._blocks:
            if off <= start < off + len(data):
                return data[start - off : end - off]
        raise NotHeld(f"bytes {start}-{end - 1} are not fetched")

    def read(self, n: int = -1) -> bytes:
        start = self._pos
        end = self.size if n is None or n < 0 else min(self.size, start + n)
        if start >= end:
            return b""
        data = self._cached(start, end)
        if data is None and self.held_only:
            data = self._held_from(start, end)
        if data is None:
            block = self.fetch(start, end)
            self._blocks.append((start, block))
            data = block[: end - start]
        self._pos = start + len(data)
        return data

    def fetch(self, start: int, end: int) -> bytes:
        """Bytes [start, end) and on to at least a block's size, in one range request; the file's state
        is left alone (threads may fetch ahead; `keep` files a block for reads)."""
        stop = min(self.size, max(end, start + _MIN_BLOCK))
        status, block, _ = _get(self.url, self.timeout, f"bytes={start}-{stop - 1}")
        self.requests += 1
        if status != 206 or len(block) != stop - start:
            raise Unreadable(f"the server stopped answering range requests at bytes {start}-{stop - 1}")
        return block

    def keep(self, start: int, block: bytes) -> None:
        """A block fetched ahead (by `fetch`), served to the reads that follow until `forget`."""
        self._blocks.append((start, block))

    def prefetch(self, start: int, size: int) -> None:
        """Fetch [start, start + size) in one request, so a member inflated chunk by chunk costs one round
        trip, not one per chunk."""
        at = self._pos
        self.seek(start)
        self.read(size)
        self.seek(at)

    def forget(self) -> None:
        """Drop what was fetched after the first block (the central directory): a member already read."""
        del self._blocks[1:]

    def readinto(self, buf) -> int:  # type: ignore[no-untyped-def,override]
        data = self.read(len(buf))
        buf[: len(data)] = data
        return len(data)


def _get(url: str, timeout: float, byte_range: str | None) -> tuple[int, bytes, str]:
    headers = {"Range": byte_range} if byte_range else {}
    with fetch.urlopen(credentials.request(url, headers), timeout) as resp:
        return resp.status, resp.read(), resp.headers.get("Content-Range", "")


def open_remote(url: str, timeout: float, sha256: str = "") -> tuple[IO[bytes], str]:
    """The remote file as a seekable binary file, and how it was read ('range' or 'full download').
    `sha256`: the index's digest of the file, checked when the whole file comes (Unreadable if it
    does not match); a range read sees too little to check."""
    req = credentials.request(url, {"Range": f"bytes=-{_TAIL}"})
    try:
        resp = fetch.urlopen(req, timeout)
    except OSError as exc:
        raise Unreadable(f"cannot fetch it: {exc}") from None
    with resp:
        if resp.status == 206:
            m = _CONTENT_RANGE.match(resp.headers.get("Content-Range", ""))
            if not m:
                raise Unreadable("the server answered a range request without a Content-Range")
            start, size = int(m.group(1)), int(m.group(3))
            return io.BufferedReader(RangeFile(url, size, timeout, (start, resp.read()))), "range"
        # 200: no range support; the body is the whole file
        spool = tempfile.TemporaryFile()  # noqa: SIM115 - handed to the caller, who closes it
        copied = 0
        while chunk := resp.read(1 << 20):
            copied += len(chunk)
            if copied > FULL_DOWNLOAD_CAP:
                spool.close()
                raise Unreadable(
                    f"the server has no range support and the file exceeds {FULL_DOWNLOAD_CAP >> 30} GiB"
                )
            spool.write(chunk)
        if (mismatch := integrity.verify(spool, url, sha256)) is not None:
            spool.close()
            raise Unreadable(mismatch)
        return spool, "full download"


def range_file(zf: zipfile.ZipFile) -> RangeFile | None:
    """The RangeFile under a zip opened by open_remote; None for a whole file on disk."""
    raw = getattr(zf.fp, "raw", None)  # open_remote's BufferedReader over a RangeFile (or a local spool)
    return raw if isinstance(raw, RangeFile) else None


def _dist_info_entries(zf: zipfile.ZipFile, member: str) -> list[zipfile.ZipInfo]:
    """The wheel's `*.dist-info/<member>` entries at the top level (one in a sound wheel)."""
    tail = f".dist-info/{member}"
    return [i for i in zf.infolist() if i.filename.count("/") == 1 and i.filename.endswith(tail)]


def held_dist_info(zf: zipfile.ZipFile, member: str) -> bytes | None:
    """A `*.dist-info/<member>` of a wheel opened by open_remote, when its bytes are among those fetched
    already; else None (absent, ambiguous, or another request needed). Wheel builders write the
    .dist-info folder last, so its small files usually lie in the tail fetched for the central
    directory: read here, they cost no request of their own."""
    hits = _dist_info_entries(zf, member)
    if len(hits) != 1:
        return None
    raw = range_file(zf)  # None: the whole file is on disk (no range support)
    if raw is not None:
        raw.held_only = True
    try:
        return zf.read(hits[0])
    except (OSError, zipfile.BadZipFile, zlib.error, EOFError, ValueError):  # NotHeld; a damaged member
        return None
    finally:
        if raw is not None:
            raw.held_only = False


def read_dist_info(
    url: str, filename: str, members: tuple[str, ...], timeout: float, sha256: str = ""
) -> dict[str, bytes]:
    """The named `*.dist-info/<member>` files of a remote wheel (METADATA, RECORD …); those absent are
    left out. Raises Unreadable with the reason (`sha256`: as open_remote)."""
    try:
        fh, _ = open_remote(url, timeout, sha256)
    except OSError as exc:
        raise Unreadable(f"cannot fetch it: {exc}") from None
    try:
        with fh, zipfile.ZipFile(fh) as zf:
            out = {}
            for member in members:
                hits = _dist_info_entries(zf, member)
                if len(hits) > 1:
                    raise Unreadable(f"{filename} holds {len(hits)} *.dist-info/{member} files")
                if hits:
                    out[member] = zf.read(hits[0])
            return out
    except (zipfile.BadZipFile, zlib.error) as exc:  # a damaged deflate stream fails in zlib itself
        raise Unreadable(f"not a readable zip: {exc}") from None
    except (OSError, EOFError, ValueError) as exc:
        raise Unreadable(f"cannot read it: {exc}") from None


def read_sdist_pkg_info(
    url: str, filename: str, timeout: float, cap: int = 256 * 1024**2, sha256: str = ""
) -> bytes:
    """PKG-INFO of a remote sdist (.tar.gz or .zip): sdists are small, so the whole file is fetched (and
    checked against the index's `sha256`)."""
    import tarfile

    try:
        resp = fetch.urlopen(credentials.request(url), timeout)
    except OSError as exc:
        raise Unreadable(f"cannot fetch it: {exc}") from None
    with resp, tempfile.TemporaryFile() as spool:
        try:
            shutil.copyfileobj(resp, spool)
        except OSError as exc:
            raise Unreadable(f"cannot fetch it: {exc}") from None
        if spool.tell() > cap:
            raise Unreadable(f"larger than {cap >> 20} MiB")
        if (mismatch := integrity.verify(spool, url, sha256)) is not None:
            raise Unreadable(mismatch)
        try:
            if filename.endswith(".zip"):
                with zipfile.ZipFile(spool) as zf:
                    names = [n for n in zf.namelist() if n.count("/") == 1 and n.endswith("/PKG-INFO")]
                    if names:
                        return zf.read(names[0])
            else:
                with tarfile.open(fileobj=spool, mode="r:*") as tf:
                    for member in tf:
                        if (
                            member.isfile()
                            and member.name.count("/") == 1
                            and member.name.endswith("/PKG-INFO")
                        ):
                            got = tf.extractfile(member)
                            if got is not None:
                                return got.read()
        except (tarfile.TarError, zipfile.BadZipFile, zlib.error, OSError, EOFError) as exc:
            raise Unreadable(f"not a readable archive: {exc}") from None
    raise Unreadable("it has no top-level PKG-INFO")

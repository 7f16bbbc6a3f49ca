"""Requires-Dist of the chosen wheels, read from the index's PEP 658 `.metadata` files.

Cached by the wheel's sha256 (content-addressed, never stale) under $SPARKENV_CACHE_DIR, else
$XDG_CACHE_HOME/sparkenv, else ~/.cache/sparkenv. A file the index does not serve is simply unknown.
"""

from __future__ import annotations

import os
import struct
import urllib.error
import urllib.request
import zlib
from concurrent.futures import ThreadPoolExecutor
from email.parser import HeaderParser
from pathlib import Path

from packaging.requirements import InvalidRequirement, Requirement


def cache_dir() -> Path:
    if os.environ.get("SPARKENV_CACHE_DIR"):
        return Path(os.environ["SPARKENV_CACHE_DIR"]) / "metadata"
    base = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(base) / "sparkenv" / "metadata"


def _fetch(url: str, sha256: str, timeout: float) -> str | None:
    cached = cache_dir() / f"{sha256}.metadata"
    try:
        return cached.read_text(encoding="utf-8")
    except OSError:
        pass
    try:
        with urllib.request.urlopen(url + ".metadata", timeout=timeout) as resp:
            text = resp.read().decode("utf-8", errors="replace")
    except (urllib.error.URLError, OSError, ValueError):
        text = _from_wheel(url, timeout)  # no PEP 658 file: read METADATA out of the wheel by range
        if text is None:
            return None
    try:
        cached.parent.mkdir(parents=True, exist_ok=True)
        tmp = cached.with_name(f".{cached.name}.{os.getpid()}.tmp")
        tmp.write_text(text, encoding="utf-8")
        os.replace(tmp, cached)
    except OSError:
        pass
    return text


def _range(url: str, spec: str, timeout: float) -> bytes:
    req = urllib.request.Request(url, headers={"Range": f"bytes={spec}"})
    with urllib.request.urlopen(req, timeout=timeout) as resp:
        if resp.status != 206:
            raise ValueError("no range support")
        return resp.read()


def _from_wheel(url: str, timeout: float) -> str | None:
    """The wheel's *.dist-info/METADATA through two HTTP range requests (zip central directory, then the
    member), the way resolvers read metadata from indexes without PEP 658 files."""
    try:
        tail = _range(url, "-65536", timeout)
        eocd = tail.rfind(b"PK\x05\x06")
        if eocd < 0:
            return None
        cd_size = struct.unpack("<I", tail[eocd + 12 : eocd + 16])[0]
        cd_start = eocd - cd_size
        if cd_start < 0:
            return None
        cd = tail[cd_start:eocd]
        pos = 0
        while pos + 46 <= len(cd) and cd[pos : pos + 4] == b"PK\x01\x02":
            method = struct.unpack("<H", cd[pos + 10 : pos + 12])[0]
            csize = struct.unpack("<I", cd[pos + 20 : pos + 24])[0]
            nlen, elen, clen = struct.unpack("<HHH", cd[pos + 28 : pos + 34])
            local = struct.unpack("<I", cd[pos + 42 : pos + 46])[0]
            name = cd[pos + 46 : pos + 46 + nlen].decode("utf-8", errors="replace")
            pos += 46 + nlen + elen + clen
            if name.count("/") == 1 and name.endswith(".dist-info/METADATA"):
                blob = _range(url, f"{local}-{local + 30 + nlen + 1024 + csize}", timeout)
                lnlen, lelen = struct.unpack("<HH", blob[26:30])
                data = blob[30 + lnlen + lelen : 30 + lnlen + lelen + csize]
                raw = zlib.decompress(data, -15) if method == 8 else data
                return raw.decode("utf-8", errors="replace")
    except (urllib.error.URLError, OSError, ValueError, struct.error, zlib.error):
        return None
    return None


def requires(
    wheels: dict[str, tuple[str, str]], timeout: float = 20.0
) -> dict[str, list[Requirement] | None]:
    """name -> its Requires-Dist (None when unknown); `wheels` maps name -> (wheel url, sha256)."""
    if not wheels:
        return {}

    def one(item: tuple[str, tuple[str, str]]) -> tuple[str, list[Requirement] | None]:
        name, (url, sha) = item
        text = _fetch(url, sha, timeout)
        if text is None:
            return name, None
        out = []
        for value in HeaderParser().parsestr(text).get_all("Requires-Dist") or []:
            try:
                out.append(Requirement(value))
            except InvalidRequirement:
                continue
        return name, out

    with ThreadPoolExecutor(min(16, len(wheels))) as pool:
        return dict(pool.map(one, wheels.items()))

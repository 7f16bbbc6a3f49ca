"""Read the Requires-Dist uv stored for a wheel while it resolved, instead of fetching it again.

uv keeps the core metadata of every wheel it looked at in its cache, one small msgpack file per pure
wheel: `<cache>/wheels-v8/<index>/<name>/<version>-<python>-<abi>-<platform>.msgpack`, an array that
starts with name, version and the Requires-Dist strings. That layout is uv's own, not a public
format: everything read here is checked (name and version must be the locked file's, every entry must
parse as a requirement), and anything unexpected means "not there" — the caller then reads the
metadata from the index as before.

A wheel with several platform tags uv files under a hash of its tags (`<version>-<16 hex>.msgpack`), a
hash of uv's own making. Such a file is taken only when it is the one file of that version in the
folder: uv picked that version for this target from a wheel (the lock lists one), so it read that
wheel's metadata and filed it there; a second file of that version (another platform's wheel, from an
earlier lock for another target) makes it ambiguous, and the metadata is read from the index instead.
"""

from __future__ import annotations

import os
import re
import struct
from pathlib import Path

from packaging.requirements import InvalidRequirement, Requirement
from packaging.utils import canonicalize_name, parse_wheel_filename

BUCKET = "wheels-v8"


def cache_dir() -> Path | None:
    if os.environ.get("UV_NO_CACHE"):
        return None
    if os.environ.get("UV_CACHE_DIR"):
        return Path(os.environ["UV_CACHE_DIR"])
    base = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(base) / "uv"


class _Bad(Exception):
    pass


def _decode(b: bytes, i: int = 0) -> tuple[object, int]:
    """The subset of msgpack uv's metadata files use: strings, arrays, maps, nil, booleans, small ints."""
    try:
        t = b[i]
    except IndexError:
        raise _Bad from None
    if t <= 0x7F:
        return t, i + 1
    if 0xA0 <= t <= 0xBF:
        n = t & 0x1F
        return b[i + 1 : i + 1 + n].decode(), i + 1 + n
    if t in (0xD9, 0xDA, 0xDB):
        width = {0xD9: 1, 0xDA: 2, 0xDB: 4}[t]
        n = int.from_bytes(b[i + 1 : i + 1 + width], "big")
        start = i + 1 + width
        return b[start : start + n].decode(), start + n
    if 0x90 <= t <= 0x9F or t in (0xDC, 0xDD):
        if t >= 0xDC:
            width = 2 if t == 0xDC else 4
            n, i = int.from_bytes(b[i + 1 : i + 1 + width], "big"), i + 1 + width
        else:
            n, i = t & 0x0F, i + 1
        out = []
        for _ in range(n):
            v, i = _decode(b, i)
            out.append(v)
        return out, i
    if t == 0xC0:
        return None, i + 1
    if t in (0xC2, 0xC3):
        return t == 0xC3, i + 1
    if 0x80 <= t <= 0x8F:
        out_map = {}
        i += 1
        for _ in range(t & 0x0F):
            k, i = _decode(b, i)
            v, i = _decode(b, i)
            out_map[str(k)] = v
        return out_map, i
    raise _Bad(hex(t))


_FOUND: dict[tuple[str, str, bool], list[Requirement]] = {}  # what was found, per process


def requires(filename: str, index_is_pypi: bool) -> list[Requirement] | None:
    """Requires-Dist of this wheel as uv cached it, or None when uv's cache does not have it for sure.
    An answer found is kept for the process (a wheel's metadata does not change; the early reads find
    it while uv resolves, the lock asks again after)."""
    key = (str(cache_dir()), filename, index_is_pypi)
    if key in _FOUND:
        return list(_FOUND[key])
    found = _requires(filename, index_is_pypi)
    if found is not None:
        _FOUND[key] = found
    return found


def _requires(filename: str, index_is_pypi: bool) -> list[Requirement] | None:
    root = cache_dir()
    if root is None or not filename.endswith(".whl"):
        return None
    try:
        name, version, _, _ = parse_wheel_filename(filename)
    except ValueError:
        return None
    key = canonicalize_name(name)
    stem = filename[: -len(".whl")].split("-", 1)[1]  # <version>-<python>-<abi>-<platform>
    if index_is_pypi:
        folders = [root / BUCKET / "pypi" / key]
    else:  # another index: only when exactly one index in the cache holds this package
        folders = list((root / BUCKET / "index").glob(f"*/{key}"))
        if len(folders) != 1:
            return None
    candidates = [folders[0] / f"{stem}.msgpack"]
    if not candidates[0].is_file():
        candidates = _by_tag_hash(folders[0], str(version), filename)
        if len(candidates) != 1:
            return None
    try:
        data = candidates[0].read_bytes()
        value, _ = _decode(data)
    except (OSError, _Bad, UnicodeDecodeError, struct.error):
        return None
    if not (isinstance(value, list) and len(value) >= 3 and isinstance(value[2], list)):
        return None
    if canonicalize_name(str(value[0])) != key or str(value[1]) != str(version):
        return None
    try:
        return [Requirement(str(r)) for r in value[2]]
    except InvalidRequirement:
        return None


_TAG_HASH = re.compile(r"[0-9a-f]{16}")


def _by_tag_hash(folder: Path, version: str, filename: str) -> list[Path]:
    """The files uv may have filed this wheel's metadata under: every file of that version in the folder
    (the caller takes one only when it is the only one, and it is filed under a tag hash)."""
    if filename.count("-") < 4 or filename.endswith("-any.whl"):
        return []
    try:
        names = [n for n in os.listdir(folder) if n.startswith(f"{version}-") and n.endswith(".msgpack")]
    except OSError:
        return []
    if len(names) != 1 or not _TAG_HASH.fullmatch(names[0][len(version) + 1 : -len(".msgpack")]):
        return []
    return [folder / names[0]]


SIMPLE = "simple-v*"  # uv's cached index pages, one file per project (its own format)
_URL_CHARS = re.compile(rb"https?://[\x21-\x7e]+")
_NAME_TAIL = re.compile(rb"[A-Za-z0-9_.+!-]*?\.(?:whl|tar\.gz|zip)")


def file_urls(key: str, prefix: str, index_is_pypi: bool) -> dict[str, str]:
    """file name -> URL of the files whose name starts with `prefix` (`<dist>-<version>-`) on the index
    page uv cached for the project: a hint where the early reads find the files uv picks, without
    reading the page again. uv's page files are in its own format, not a public one; what is taken from
    one is only a URL spelled out whole in it (`http(s)://…/<file name>`). Nothing read there is
    trusted: what is read at such a URL is kept by that URL, and used only when the lock names the same
    URL (lock/wheel_files.py, lock/wheel_elf.py)."""
    root = cache_dir()
    if root is None or not prefix:
        return {}
    if index_is_pypi:
        pages = list(root.glob(f"{SIMPLE}/pypi/{key}.rkyv"))
    else:  # another index: only when exactly one index in the cache has a page of this project
        pages = list(root.glob(f"{SIMPLE}/index/*/{key}.rkyv"))
    if len(pages) != 1:
        return {}
    try:
        data = pages[0].read_bytes()
    except OSError:
        return {}
    found: dict[str, str] = {}
    needle = b"/" + prefix.encode()
    at = data.find(needle)
    while at >= 0:  # bytes.find, not a regular expression: a page of a big project is megabytes
        tail = _NAME_TAIL.match(data, at + len(needle))
        start = data.rfind(b"http", max(0, at - 4096), at)
        # the URL's run of printable bytes up to the name's end only: uv keeps its URLs back to back, and a
        # match left to run on took a page's every URL after it
        url = _URL_CHARS.match(data, start, tail.end()) if start >= 0 and tail is not None else None
        if tail is not None and url is not None and url.end() == tail.end():
            name = data[at + 1 : tail.end()].decode("ascii")
            found.setdefault(name, _without_dot_segments(data[start : tail.end()].decode("ascii")))
        at = data.find(needle, at + 1)
    return found


def _without_dot_segments(url: str) -> str:
    """uv keeps a page's relative links joined as they are (`…/simple/x/../../files/f.whl`); the lock
    names them resolved (RFC 3986's dot segments removed), as a read of the lock's URL will ask."""
    if "/." not in url:  # no dot segment anywhere: most URLs, and urlsplit costs more than the scan
        return url
    import urllib.parse

    parts = urllib.parse.urlsplit(url)
    if "/." not in parts.path:
        return url
    base = urllib.parse.urlunsplit((parts.scheme, parts.netloc, "/", "", ""))
    return urllib.parse.urljoin(
        base, urllib.parse.urlunsplit(("", "", parts.path.lstrip("/"), parts.query, ""))
    )

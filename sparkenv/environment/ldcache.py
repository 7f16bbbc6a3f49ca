"""The dynamic loader's view of where a soname lives, without running ldconfig (no subprocess at start).

Search order of glibc's ld.so for a DT_NEEDED entry of an object: its DT_RPATH (only when it has no
DT_RUNPATH), LD_LIBRARY_PATH, its DT_RUNPATH, /etc/ld.so.cache, then the default folders. The cache is
read from its binary file (glibc's "glibc-ld.so.cache1.1" format, string offsets relative to that
header); an unreadable or unknown cache counts as empty, and the evidence says which folders were seen.
"""

from __future__ import annotations

import functools
import os
import struct

from sparkenv.environment.reading import UnreadableFile, read_bytes

CACHE = "/etc/ld.so.cache"
# The cache to read instead (an image's root mounted elsewhere; tests that need a machine without CUDA).
CACHE_ENV = "SPARKENV_LD_SO_CACHE"
_MAGIC = b"glibc-ld.so.cache1.1"
_DEFAULT_DIRS = ("/lib", "/usr/lib", "/lib64", "/usr/lib64")
_MULTIARCH = {"x86_64": "x86_64-linux-gnu", "aarch64": "aarch64-linux-gnu"}


def parse_cache(data: bytes) -> dict[str, list[str]]:
    """soname -> paths, in the cache's order."""
    start = data.find(_MAGIC)
    if start < 0:
        return {}
    try:
        nlibs, _len_strings = struct.unpack_from("<II", data, start + len(_MAGIC))
    except struct.error:
        return {}
    entries = start + len(_MAGIC) + 8 + 4 + 4 + 12  # flags+pad, extension offset, unused[3]
    out: dict[str, list[str]] = {}
    for i in range(min(nlibs, 1 << 20)):
        try:
            _flags, key, value, _os, _hwcap = struct.unpack_from("<iIIIQ", data, entries + 24 * i)
        except struct.error:
            break
        name, path = _cstr(data, start + key), _cstr(data, start + value)
        if name and path:
            out.setdefault(name, []).append(path)
    return out


def _cstr(data: bytes, offset: int) -> str | None:
    end = data.find(b"\0", offset, offset + 4096)
    return data[offset:end].decode("utf-8", "replace") if 0 <= offset < end else None


@functools.cache
def cache(path: str = CACHE) -> dict[str, list[str]]:
    try:
        return parse_cache(read_bytes(path, what="the loader cache", limit=64 << 20))
    except UnreadableFile:
        return {}


def default_dirs(machine: str) -> list[str]:
    triplet = _MULTIARCH.get(machine)
    extra = [f"/lib/{triplet}", f"/usr/lib/{triplet}"] if triplet else []
    return [*extra, *_DEFAULT_DIRS]


def _expand(entry: str, origin: str) -> str:
    return entry.replace("${ORIGIN}", origin).replace("$ORIGIN", origin)


def resolve(
    soname: str,
    obj_path: str,
    rpath: tuple[str, ...],
    runpath: tuple[str, ...],
    machine: str,
    env_ld_path: str | None = None,
    cache_path: str | None = None,
) -> tuple[str | None, str]:
    """(path the loader would load, how it was found), or (None, where it looked)."""
    cache_path = cache_path or os.environ.get(CACHE_ENV) or CACHE
    origin = os.path.dirname(os.path.realpath(obj_path))
    ld_path = os.environ.get("LD_LIBRARY_PATH", "") if env_ld_path is None else env_ld_path
    steps: list[tuple[str, list[str]]] = []
    if rpath and not runpath:
        steps.append(("DT_RPATH", [_expand(p, origin) for p in rpath]))
    steps.append(("LD_LIBRARY_PATH", [p for p in ld_path.split(":") if p]))
    if runpath:
        steps.append(("DT_RUNPATH", [_expand(p, origin) for p in runpath]))
    for how, dirs in steps:
        for d in dirs:
            candidate = os.path.join(d, soname)
            if os.path.isfile(candidate):
                return os.path.normpath(candidate), f"{how} {d}"
    for candidate in cache(cache_path).get(soname, []):
        if os.path.isfile(candidate):
            return candidate, f"ld.so.cache ({cache_path})"
    for d in default_dirs(machine):
        candidate = os.path.join(d, soname)
        if os.path.isfile(candidate):
            return candidate, f"default folder {d}"
    looked = [how for how, dirs in steps if dirs] + ["ld.so.cache", "default folders"]
    return None, "not found in " + ", ".join(looked)

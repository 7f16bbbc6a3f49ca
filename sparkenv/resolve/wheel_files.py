"""The shared objects each resolved binary wheel ships, read from its zip central directory by HTTP
range requests (resolve/remote_zip.py): what the audit reads from RECORD after install, known at lock.

Only wheels with a platform tag are read (a `*-none-any` wheel ships no native code for a CPU). The list
is cached by the file's sha256 beside the metadata cache (content-addressed, never stale). A wheel whose
central directory cannot be read is returned with the reason: the rule says so, never a silent PASS.
"""

from __future__ import annotations

import zipfile
from concurrent.futures import ThreadPoolExecutor

from packaging.utils import InvalidWheelFilename, parse_wheel_filename

from sparkenv.facts.dist_view import GPU_SUFFIXES
from sparkenv.resolve import metadata, remote_zip


def is_binary(filename: str) -> bool:
    try:
        tags = parse_wheel_filename(filename)[3]
    except InvalidWheelFilename:
        return False
    return any(t.platform != "any" for t in tags)


def _native(names: list[str]) -> list[str]:
    """Shared objects, and the first GPU-code file when there is one (what makes it a GPU package)."""
    shared = [n for n in names if n.endswith(".so") or ".so." in n.rsplit("/", 1)[-1]]
    gpu = [n for n in names if n.lower().endswith(GPU_SUFFIXES)]
    return shared + gpu[:1]


def shared_objects(files: tuple[str, ...]) -> tuple[str, ...]:
    return tuple(f for f in files if not f.lower().endswith(GPU_SUFFIXES))


def ships_gpu_code(files: tuple[str, ...]) -> bool:
    return any(f.lower().endswith(GPU_SUFFIXES) for f in files)


# URL -> native files, of wheels read before their sha256 was known (resolve/early.py, from uv's cached
# page): taken by a read of the same URL, and filed then under the sha256 that read names
_BY_URL: dict[str, tuple[str, ...]] = {}


def read_one(ref: metadata.FileRef, timeout: float = 30.0) -> tuple[str, tuple[str, ...] | str]:
    """(key, its native files) of one binary wheel, or (key, the reason); cached by its sha256 (by its
    URL for this process when no sha256 is given)."""
    cached = metadata.cache_dir() / f"{ref.sha256}.native-2"
    if ref.sha256:
        try:
            text = cached.read_text(encoding="utf-8")
            return ref.key, tuple(ln for ln in text.splitlines() if ln)
        except (OSError, UnicodeDecodeError):
            pass
        early = _BY_URL.pop(ref.url, None)  # the bytes at the URL the lock names, read moments ago
        if early is not None:
            metadata.store(ref.sha256, "".join(f"{n}\n" for n in early), ".native-2")
            return ref.key, early
    elif (early := _BY_URL.get(ref.url)) is not None:
        return ref.key, early
    try:
        fh, _ = remote_zip.open_remote(ref.url, timeout)
        with fh, zipfile.ZipFile(fh) as zf:
            names = _native(zf.namelist())
    except remote_zip.Unreadable as exc:
        return ref.key, str(exc)
    except (zipfile.BadZipFile, OSError, EOFError, ValueError) as exc:
        return ref.key, f"not a readable zip: {exc}"
    if ref.sha256:
        metadata.store(ref.sha256, "".join(f"{n}\n" for n in names), ".native-2")
    else:
        _BY_URL[ref.url] = tuple(names)
    return ref.key, tuple(names)


def read(refs: list[metadata.FileRef], timeout: float = 30.0) -> dict[str, tuple[str, ...] | str]:
    """key -> the paths of the shared objects its wheel ships (and its first GPU-code file, if any), or a
    one-line reason it could not be read."""

    def one(ref: metadata.FileRef) -> tuple[str, tuple[str, ...] | str]:
        return read_one(ref, timeout)

    wanted = [r for r in refs if r.is_wheel and is_binary(r.filename)]
    if not wanted:
        return {}
    with ThreadPoolExecutor(min(16, len(wanted))) as pool:
        return dict(pool.map(one, wanted))

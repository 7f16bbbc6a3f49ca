"""The shared objects each resolved binary wheel ships, read from its zip central directory by HTTP
range requests (index/remote_zip.py): what the audit reads from RECORD after install, known at lock.

Only wheels with a platform tag are read (a `*-none-any` wheel ships no native code for a CPU). The list
is cached by the file's sha256 beside the metadata cache (content-addressed, never stale). A wheel whose
central directory cannot be read is returned with the reason: the rule says so, never a silent PASS.
"""

from __future__ import annotations

import zipfile
from concurrent.futures import ThreadPoolExecutor

from packaging.utils import InvalidWheelFilename, parse_wheel_filename

from sparkenv.facts.dist_view import GPU_SUFFIXES
from sparkenv.index import integrity, metadata, remote_zip


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


# URL -> native files, of wheels read before their sha256 was known (lock/early.py, from uv's cached
# page): taken by a read of the same URL, and filed then under the sha256 that read names
_BY_URL: dict[str, tuple[str, ...]] = {}


def _known(ref: metadata.FileRef) -> tuple[str, ...] | None:
    """The wheel's native files where no download is needed: kept in the cache by its sha256, or read
    moments ago at the URL the lock names (lock/early.py; then filed under the sha256 now)."""
    if ref.sha256:
        text = metadata.cached(ref.sha256, ".native-2")
        if text is not None:
            return tuple(ln for ln in text.splitlines() if ln)
        early = _BY_URL.pop(ref.url, None)  # the bytes at the URL the lock names, read moments ago
        if early is not None and integrity.mismatch(ref.url, ref.sha256) is not None:
            return None  # not the bytes the lock names: read again, and the read says why not
        if early is not None:  # filed beside the judgement (core/filing.py): it is after uv's exit
            metadata.store(ref.sha256, "".join(f"{n}\n" for n in early), ".native-2", behind=True)
        return early
    return _BY_URL.get(ref.url)


def read_one(ref: metadata.FileRef, timeout: float = 30.0) -> tuple[str, tuple[str, ...] | str]:
    """(key, its native files) of one binary wheel, or (key, the reason); cached by its sha256 (by its
    URL for this process when no sha256 is given)."""
    known = _known(ref)
    return (ref.key, known) if known is not None else _downloaded(ref, timeout)


def _downloaded(ref: metadata.FileRef, timeout: float) -> tuple[str, tuple[str, ...] | str]:
    """read_one's answer from the wheel itself (its zip directory by range requests), kept for later."""
    try:
        fh, _ = remote_zip.open_remote(ref.url, timeout, ref.sha256)
        with fh, zipfile.ZipFile(fh) as zf:
            names = _native(zf.namelist())
            held = remote_zip.held_dist_info(zf, "METADATA")
    except remote_zip.Unreadable as exc:
        return ref.key, str(exc)
    except (zipfile.BadZipFile, OSError, EOFError, ValueError) as exc:
        return ref.key, f"not a readable zip: {exc}"
    if ref.sha256:
        metadata.store(ref.sha256, "".join(f"{n}\n" for n in names), ".native-2")
    else:
        _BY_URL[ref.url] = tuple(names)
    if held is not None:  # fetched with the central directory: a metadata read after needs no request
        metadata.keep(ref, held.decode("utf-8", errors="replace"), metadata.FROM_WHEEL)
    return ref.key, tuple(names)


def read(refs: list[metadata.FileRef], timeout: float = 30.0) -> dict[str, tuple[str, ...] | str]:
    """key -> the paths of the shared objects its wheel ships (and its first GPU-code file, if any), or a
    one-line reason it could not be read."""

    def one(ref: metadata.FileRef) -> tuple[str, tuple[str, ...] | str]:
        return _downloaded(ref, timeout)

    wanted = [r for r in refs if r.is_wheel and is_binary(r.filename)]
    # what needs no download is taken here, in turn, as metadata.read does; threads only for the network:
    # filing an early answer under its sha256 is a file made, and a pool of 16 threads making them in one
    # folder was slower than one thread (benchmarks/lock_speed.py --breakdown); one filing thread makes
    # them now, beside the judgement
    known = {r.filename: k for r in wanted if (k := _known(r)) is not None}
    remote = [r for r in wanted if r.filename not in known]
    got: dict[str, tuple[str, tuple[str, ...] | str]] = {}
    if remote:
        with ThreadPoolExecutor(min(16, len(remote))) as pool:
            got = dict(zip([r.filename for r in remote], pool.map(one, remote), strict=True))
    # in the order of `refs`, as before: a key with two wheels takes the last one's answer
    return dict((r.key, known[r.filename]) if r.filename in known else got[r.filename] for r in wanted)

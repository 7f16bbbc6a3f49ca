"""Reads that start while uv resolves: each file uv picks is read as soon as uv says it picked it.

uv names its picks on stderr (`DEBUG Selecting: name==version [why] (file name)`, shown under
RUST_LOG=uv_resolver::resolver=debug). For each, a worker finds the file's URL, in the index page uv
cached (uv_cache.file_urls) or else the project's index page (URL and sha256), and reads what sparkenv
will need of that file: the native file list of a binary wheel (wheel_files), what an sdist builds
(sdist_scan); and the Requires-Dist uv cached of a wheel it picked is parsed then (uv_cache keeps it for
the process). An answer read where the index page gave the sha256 goes to the caches those readers keep
by it; one read at a URL from uv's page is kept by that URL for this process, and taken only by a read
of the same URL after uv (then filed under the sha256 the lock names). After uv returns, `settle` waits
for the reads of the lock's versions, drops the rest (picks uv backtracked from), and the readers run as
before and find their answers. A line read wrong, a page that cannot be read, a read that fails: the
reader does it again after uv, as without this module. uv's log and cache are hints, never a fact.

Only files with something to read are queued (binary wheels, sdists), and not those whose answer an
earlier lock left in the cache: `NAMES` maps each file name a lock held to its sha256. A name is only a
hint (an index could serve other bytes under it): the readers after uv look up the sha256 uv wrote.

The lock reads the file that sorts first among the wheels of a version its target takes (uv lists
them by name), and uv may have picked another one (`manylinux_2_28` where a `manylinux2014` wheel sorts
first): a binary wheel of the same version, interpreter and ABI, libc and architecture that sorts before
the pick is read too, with its metadata when uv's cache lacks it.

The ELF and fatbin headers of GPU packages (wheel_elf) are read here too, as soon as the file list
says so: wheel_elf.is_gpu_wheel, the lock's own judgement, asked with "requires torch or a CUDA
library" taken from the Requires-Dist the wheel declares, whatever their marker but an extra (the lock
follows those that apply on the target, extras it was asked for included: the guess may be wrong both
ways, and then costs only time). These reads spend a wheel_elf.Budget of their own and keep their
answer in memory; the lock's read takes it only where its own budget, in its own order, would have read
that wheel whole (wheel_elf.read_one), and reads anything else itself.
"""

from __future__ import annotations

import queue
import re
import threading
import time
from dataclasses import dataclass, field
from typing import Any

from packaging.utils import canonicalize_name

_SELECTING = re.compile(r"^DEBUG Selecting: ([^=\s]+)==(\S+) \[[^\]]*\] \(([^()\s]+)\)\s*$")
WORKERS = 16
NAMES = "early-names.json"  # in the metadata cache folder: file name -> sha256 of the files locks held


def picked(line: str) -> tuple[str, str, str] | None:
    """(key, version, file name) of a `Selecting:` line of uv's resolver log; None for any other line."""
    m = _SELECTING.match(line)
    if m is None:
        return None
    return canonicalize_name(m.group(1)), m.group(2), m.group(3)


@dataclass
class _Job:
    key: str
    version: str
    filename: str
    done: threading.Event = field(default_factory=threading.Event)
    dropped: bool = False
    first: str = ""  # the wheel of that version that sorts first, when it is another one (read too)


class EarlyReads:
    """Started before uv; `line` is given each line of uv's stderr; `settle` after uv returns."""

    def __init__(self, index_url: str | None, timeout: float = 30.0, workers: int = WORKERS) -> None:
        self.index_url = index_url
        self.timeout = timeout
        self.workers = workers
        self.jobs: dict[str, _Job] = {}  # by file name
        self._queue: queue.Queue[_Job | None] = queue.Queue()
        self._lock = threading.Lock()
        self.names = _names()
        self.learned: dict[str, str] = {}  # file name -> sha256, of the picks read here
        self.elf_budget: Any = None  # wheel_elf.Budget, made by the first ELF read
        # daemon threads: a lock stopped by a signal or an error does not wait for a read to time out
        for n in range(workers):
            threading.Thread(target=self._work, name=f"sparkenv-early-{n}", daemon=True).start()

    def line(self, text: str) -> None:
        got = picked(text)
        if got is None:
            return
        key, version, filename = got
        if filename.endswith(".whl"):  # what uv has cached of it is parsed now, not after uv returns
            from sparkenv.index import uv_cache
            from sparkenv.index.default_index import is_installers_default

            uv_cache.requires(filename, is_installers_default(self.index_url))
        if not _worth_reading(filename) or _answered(self.names.get(filename, ""), filename, key):
            return
        with self._lock:
            # uv moved on from its earlier picks of this package (it backtracked): not read unless
            # picked again
            for other in self.jobs.values():
                if other.key == key and other.filename != filename and not other.done.is_set():
                    other.dropped = True
            job = self.jobs.get(filename)
            if job is not None and not (job.dropped and job.done.is_set()):
                job.dropped = False  # picked again while still queued: read it after all
                return
            job = self.jobs[filename] = _Job(key, version, filename)
        self._queue.put(job)

    def _work(self) -> None:
        while True:
            job = self._queue.get()
            if job is None:
                return
            try:
                if not job.dropped:
                    self._read(job)
            except Exception:  # a hint that failed: the reader after uv does it
                pass
            finally:
                job.done.set()

    def _read(self, job: _Job) -> None:
        from sparkenv.index import metadata
        from sparkenv.knowledge import packages
        from sparkenv.lock import sdist_scan, wheel_files

        urls, hashes = self._files_of(job)
        if not urls.get(job.filename):
            return
        first = _sorts_first(job.filename, list(urls))
        names = dict.fromkeys([first, job.filename])
        refs = [metadata.FileRef(job.key, f, urls[f], hashes.get(f, "")) for f in names]
        with self._lock:  # a pick uv backtracks from is picked again next time: not read twice
            job.first = first if first != job.filename else ""
            self.learned.update({r.filename: r.sha256 for r in refs if r.sha256})
        for n, ref in enumerate(refs):
            if job.dropped:
                return
            if ref.is_wheel:
                if wheel_files.is_binary(ref.filename):  # its METADATA too, when it came with the tail
                    wheel_files.read_one(ref, self.timeout)
                if n == 0 and len(refs) > 1:  # uv read the pick's metadata, not this one's
                    metadata.read(refs[:1], self.timeout, self.index_url)
            elif job.key not in packages().compiles_cuda:  # known answers need no download
                sdist_scan.scan([ref], self.timeout)
        if refs[0].is_wheel and wheel_files.is_binary(refs[0].filename) and not job.dropped:
            self._read_elf(refs[0], job)

    def _files_of(self, job: _Job) -> tuple[dict[str, str], dict[str, str]]:
        """(file name -> URL, file name -> sha256) of the picked version's files. A wheel's: from the
        page uv cached (uv_cache.file_urls: URLs only, read by URL), else from the index page, as an
        sdist's always are (its scan is kept by the sha256)."""
        from sparkenv.index import uv_cache
        from sparkenv.index.default_index import is_installers_default
        from sparkenv.lock import fallbacks

        if job.filename.endswith(".whl"):
            prefix = job.filename.split("-", 2)
            urls = uv_cache.file_urls(
                job.key, f"{prefix[0]}-{prefix[1]}-", is_installers_default(self.index_url)
            )
            if urls.get(job.filename):
                return urls, {}
        rel = fallbacks.release(self.index_url, job.key, job.version)
        if rel is None or not rel.sha256.get(job.filename):
            return {}, {}
        return {f: u for f, u in rel.urls.items() if u and rel.sha256.get(f)}, rel.sha256

    def _read_elf(self, ref: Any, job: _Job) -> None:
        """The ELF of a wheel the lock will read it of (wheel_elf.is_gpu_wheel; its Requires-Dist
        taken whatever their markers but an extra), into wheel_elf's memory, on a budget of its own."""
        from sparkenv.lock import wheel_elf, wheel_files

        files = wheel_files.read_one(ref, self.timeout)[1]  # from the cache just filled
        if not isinstance(files, tuple):
            return
        if wheel_elf.is_gpu_wheel(ref.key, job.version, files, lambda: self._needs_gpu(ref)):
            with self._lock:
                if self.elf_budget is None:
                    self.elf_budget = wheel_elf.Budget()
            paths = wheel_files.shared_objects(files)
            wheel_elf.read_early(ref, paths, self.elf_budget, self.timeout, stop=lambda: job.dropped)

    def _needs_gpu(self, ref: Any) -> bool:
        """Whether a Requires-Dist of the wheel names torch or a CUDA library, whatever its marker but
        an extra: from uv's cache, else the metadata the lock would read (read now, into its cache)."""
        from sparkenv.index import metadata, uv_cache
        from sparkenv.index.default_index import is_installers_default
        from sparkenv.lock import wheel_elf

        requires = uv_cache.requires(ref.filename, is_installers_default(self.index_url))
        if requires is None:
            got = metadata.read([ref], self.timeout, self.index_url).get(ref.key)
            if not isinstance(got, metadata.Metadata):
                return False
            requires = got.requires
        # one behind an extra is left out: an extra is seldom asked for, and a guess costs only time
        return any(
            wheel_elf.built_against(canonicalize_name(r.name))
            for r in requires
            if r.marker is None or "extra" not in str(r.marker)
        )

    def settle(self, files: dict[str, str], timeout: float | None = None) -> None:
        """Wait for the reads of the versions the lock holds (`files`: file name -> sha256), at most
        `timeout` seconds; drop the others."""
        with self._lock:
            _remember(self.names, {**self.learned, **files})
        deadline = time.monotonic() + (self.timeout if timeout is None else timeout)
        with self._lock:
            jobs = list(self.jobs.values())
        # a job of a version the lock holds is waited for even when its file list is on disk already: it
        # may be reading the ELF of that wheel, or the wheel of that version the lock holds
        held = {_version_of(f) for f in files}
        wanted = [j for j in jobs if j.filename in files or (j.key, j.version) in held]
        for job in jobs:
            if job not in wanted:
                job.dropped = True
        for job in wanted:
            job.done.wait(max(0.0, deadline - time.monotonic()))
        self.close()

    def close(self) -> None:
        """Drop what is still queued and let the workers end (a read under way finishes on its own)."""
        with self._lock:
            for job in self.jobs.values():
                job.dropped = job.dropped or not job.done.is_set()
        for _ in range(self.workers):
            self._queue.put(None)


def _version_of(filename: str) -> tuple[str, str] | None:
    """(normalized name, version) a wheel's file name says; None for another file."""
    from packaging.utils import InvalidWheelFilename, parse_wheel_filename

    try:
        name, version, _, _ = parse_wheel_filename(filename)
    except InvalidWheelFilename:
        return None
    return name, str(version)


_LIBC_ARCH = re.compile(r"^(manylinux|musllinux|linux)(?:_\d+_\d+|2014|2010|1)?_(.+)$")


def _sorts_first(pick: str, names: list[str]) -> str:
    """Of the version's files, the binary wheel the lock would read rather than uv's pick: the one that
    sorts first among those sharing an interpreter and ABI, a libc and an architecture with the pick;
    the pick itself when none sorts before it."""
    from packaging.utils import InvalidWheelFilename, parse_wheel_filename

    from sparkenv.lock import wheel_files

    def kinds(name: str) -> tuple[set[tuple[str, str]], set[tuple[str, ...]]]:
        try:
            tags = parse_wheel_filename(name)[3]
        except InvalidWheelFilename:
            return set(), set()
        return {(t.interpreter, t.abi) for t in tags}, {
            m.groups() for t in tags if (m := _LIBC_ARCH.match(t.platform))
        }

    if not wheel_files.is_binary(pick):
        return pick
    pairs, platforms = kinds(pick)
    for name in sorted(n for n in names if n.endswith(".whl") and n < pick and wheel_files.is_binary(n)):
        theirs = kinds(name)
        if pairs & theirs[0] and platforms & theirs[1]:
            return name
    return pick


def _worth_reading(filename: str) -> bool:
    from sparkenv.lock import wheel_files

    return wheel_files.is_binary(filename) if filename.endswith(".whl") else True


def _answered(sha256: str, filename: str, key: str = "") -> bool:
    """Whether the readers after uv need nothing read of this file: the cache holds it, or packages.toml
    knows what the sdist builds."""
    from sparkenv.index import metadata
    from sparkenv.knowledge import packages
    from sparkenv.lock import sdist_scan

    if key and not filename.endswith(".whl") and key in packages().compiles_cuda:
        return True
    if len(sha256) != 64:
        return False
    suffix = ".native-2" if filename.endswith(".whl") else sdist_scan.CACHE_SUFFIX
    return metadata.STORE.path(f"{sha256}{suffix}").is_file()


def _names() -> dict[str, str]:

    from sparkenv.index import metadata

    data = metadata.STORE.load(NAMES)
    if not isinstance(data, dict):
        return {}
    return {k: v for k, v in data.items() if isinstance(k, str) and isinstance(v, str)}


def _remember(names: dict[str, str], files: dict[str, str]) -> None:

    from sparkenv.index import metadata

    new = {f: sha for f, sha in files.items() if sha and names.get(f) != sha and _worth_reading(f)}
    if new:
        metadata.STORE.save(NAMES, {**names, **new})

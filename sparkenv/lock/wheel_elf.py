"""DT_NEEDED and the fatbin headers (G7: which GPU targets the kernels carry) of the shared objects inside
the resolved wheels of GPU packages, read at lock, within a budget: what the audit reads from installed
files, known before anything is installed. The fatbin reader is the audit's (environment/kernels.py),
fed by the member's bytes; the GPU is the profile's (the GB10).

A member of a wheel is deflated: its ELF headers, dynamic section, string table and fatbins can sit
anywhere in it, so a member is downloaded whole (by range requests through the zip) when its compressed
size is at most PER_OBJECT bytes, and all members together at most BUDGET compressed bytes per lock
(the budget is what crosses the network). It is inflated into a temporary file, not memory, and read
there with pread as an installed file is. What is left unread is returned with the reason, and the rule
says so (an INFO, never a silent PASS). Results are cached by the wheel's sha256 when every lock reads
the wheel so (settled): read whole, or whole but for members over a limit of their own (PER_OBJECT,
MAX_INFLATED, MAX_OBJECTS), which no lock reads. A read cut short by the lock's budget, or that failed,
is not kept: a later lock, charged nothing for what is cached, may read more.

The members of a wheel are fetched a few at a time (AHEAD range requests in flight) and read in order:
which are read and what the budget is charged are decided in the order of `paths`, as with one request
at a time. A read that starts while uv still resolves (`read_early`, from lock/early.py, on a budget
of its own) keeps a complete answer in memory only, with what each member cost; the lock's own read, in
its order and on its budget, takes it only when every member fits what is left (exactly as it would
have read it) and then files it on disk. What the lock could not have read whole is read again: the
lock's findings do not depend on how early a read began.
"""

from __future__ import annotations

import json
import os
import shutil
import tempfile
import threading
import zipfile
import zlib
from collections.abc import Callable

from sparkenv.cuda import coverage, elf
from sparkenv.environment import kernels
from sparkenv.facts.resolved import WheelElves
from sparkenv.index import integrity, metadata, remote_zip

# Compressed bytes, what crosses the network. GPU extension members deflate about 3.5x (autoawq-kernels,
# nccl-extensions, torchcodec wheels): these are the download the earlier 64 MiB / 512 MiB budgets on
# inflated size cost, now without reading a large member whole into memory.
PER_OBJECT = 24 * 1024**2  # one member
BUDGET = 160 * 1024**2  # a lock
MAX_INFLATED = 2 * 1024**3  # what one member may take on disk once inflated (a zip bomb stops here)
MAX_OBJECTS = 64  # per wheel
AHEAD = 4  # members fetched at once
AHEAD_BYTES = 64 * 1024**2  # compressed bytes fetched ahead of the member being read, at most


class Budget:
    def __init__(self, total: int = BUDGET) -> None:
        self.left = total

    def take(self, size: int) -> bool:
        if size > PER_OBJECT or size > self.left:
            return False
        self.left -= size
        return True


Objects = tuple[tuple[str, elf.ElfInfo], ...]


def _limits() -> list[int]:
    """What a read leaves unread depends on: a kept partial read holds for these limits only."""
    return [PER_OBJECT, MAX_INFLATED, MAX_OBJECTS]


def _suffix(cap: coverage.Capability, partial: bool = False) -> str:
    # what is kept depends on the fatbin reader and on the GPU (the data sections are read only where
    # .nv_fatbin has no code for it). A read that left members unread goes in a file of its own: an
    # earlier sparkenv, which knows no "unread" in an entry, would take it for a whole read
    return f".elf-{kernels.READER}-sm{cap[0]}{cap[1]}{'.partial' if partial else ''}.json"


def _cached(sha256: str, cap: coverage.Capability) -> WheelElves | None:
    for partial in (False, True):
        text = metadata.cached(sha256, _suffix(cap, partial))
        if text is not None:
            return _entry(text, partial)
    return None


def _entry(text: str, partial: bool) -> WheelElves | None:
    """A kept read; None when damaged, or a partial one kept under other limits than these."""
    try:
        data = json.loads(text)
        objects = tuple(
            (o["path"], elf.ElfInfo(o["machine"], o["soname"], tuple(o["needed"]))) for o in data["objects"]
        )
        unread = data.get("unread", "")
        # a whole read names nothing unread; a partial one names what, under these limits
        if not isinstance(unread, str) or bool(unread) != partial:
            return None
        if partial and data.get("limits") != _limits():
            return None
        return WheelElves(objects, unread, tuple(kernels.from_json(data["kernels"])))
    except (ValueError, KeyError, TypeError, AttributeError):
        return None


def _store(sha256: str, cap: coverage.Capability, found: WheelElves) -> None:
    rows = [
        {"path": p, "machine": i.machine, "soname": i.soname, "needed": list(i.needed)}
        for p, i in found.objects
    ]
    data: dict[str, object] = {"objects": rows, "kernels": kernels.to_json(found.kernels)}
    if found.unread:
        data |= {"unread": found.unread, "limits": _limits()}
    metadata.store(sha256, json.dumps(data), _suffix(cap, partial=bool(found.unread)))


def _read_member(
    zf: zipfile.ZipFile, info: zipfile.ZipInfo, cap: coverage.Capability
) -> tuple[elf.ElfInfo | elf.ElfDefect | None, coverage.ObjectKernels | None]:
    """One member inflated into a temporary file (removed on close), read as an installed file is. Its
    compressed bytes are fetched in one request (the local header's extra field may be longer than the
    central directory's: 64 KiB of slack) and dropped once read."""
    remote = remote_zip.range_file(zf)
    if remote is not None:
        start, end = _span(info)
        remote.prefetch(start, end - start)
    try:
        return _inflate_and_read(zf, info, cap)
    finally:
        if remote is not None:
            remote.forget()


def _span(info: zipfile.ZipInfo) -> tuple[int, int]:
    """The bytes of a member in the zip: its local header and compressed data."""
    header = 30 + len(info.orig_filename.encode()) + (1 << 16)
    return info.header_offset, info.header_offset + header + info.compress_size


class _Fetch(threading.Thread):
    """One member's bytes fetched in a daemon thread: a lock that ends (or is stopped) while one is in
    flight does not wait for it."""

    def __init__(self, remote: remote_zip.RangeFile, start: int, end: int) -> None:
        super().__init__(name="sparkenv-member", daemon=True)
        self.remote, self.span = remote, (start, end)
        self.block = b""
        self.error: BaseException | None = None
        self.start()

    def run(self) -> None:
        try:
            self.block = self.remote.fetch(*self.span)
        except BaseException as exc:  # handed to the reader, raised there
            self.error = exc

    def result(self) -> bytes:
        self.join()  # each request has its timeout
        if self.error is not None:
            raise self.error
        return self.block


class _Ahead:
    """Fetches the members the read will take, AHEAD at a time, in its order; `wait` hands one over."""

    def __init__(self, remote: remote_zip.RangeFile, infos: list[zipfile.ZipInfo]) -> None:
        self.remote = remote
        self.todo = [_span(i) for i in infos]
        self.fetches: dict[tuple[int, int], _Fetch] = {}
        self._fill()

    def _fill(self) -> None:
        queued = [span for span in self.todo if span in self.fetches]
        ahead = sum(end - start for start, end in queued)
        for start, end in self.todo[len(queued) :]:
            if len(self.fetches) >= AHEAD or (self.fetches and ahead + end - start > AHEAD_BYTES):
                return
            ahead += end - start
            self.fetches[(start, end)] = _Fetch(self.remote, start, end)

    def wait(self, info: zipfile.ZipInfo) -> None:
        """The member's bytes filed in the remote file (an error of its fetch is raised here); a
        member not planned is left to be read as it comes."""
        span = _span(info)
        if not self.todo or self.todo[0] != span:
            return
        self.todo.pop(0)
        fetch = self.fetches.pop(span)
        self._fill()
        self.remote.keep(span[0], fetch.result())

    def close(self) -> None:
        """Nothing more is started; fetches under way end on their own (their bytes are dropped)."""
        self.todo.clear()


def _inflate_and_read(
    zf: zipfile.ZipFile, info: zipfile.ZipInfo, cap: coverage.Capability
) -> tuple[elf.ElfInfo | elf.ElfDefect | None, coverage.ObjectKernels | None]:
    with tempfile.TemporaryFile(prefix="sparkenv-member-") as tmp, zf.open(info) as src:
        shutil.copyfileobj(src, tmp, 1 << 20)
        tmp.flush()
        fd = tmp.fileno()

        def read(offset: int, size: int) -> bytes:
            return os.pread(fd, size, offset)

        got = elf.parse(read)
        gpu = (
            kernels.read_with(read, info.file_size, info.filename, cap)
            if isinstance(got, elf.ElfInfo)
            else None
        )
        return got, gpu


def read_one(
    ref: metadata.FileRef,
    paths: tuple[str, ...],
    budget: Budget,
    timeout: float,
    cap: coverage.Capability | None = None,
) -> WheelElves:
    """The ELF and fatbin facts of the wheel's shared objects that fit the budget, and what was left
    unread. `cap`: the GPU the kernels are read for (the GB10 by default)."""
    cap = cap or coverage.gb10()
    if ref.sha256 and (hit := _cached(ref.sha256, cap)) is not None:
        return hit
    # an early read of bytes other than those the lock names is not taken (nor charged): read again
    mismatched = integrity.mismatch(ref.url, ref.sha256) is not None
    early = None if mismatched else _early_answer(ref.url, cap, paths, budget)
    if early is not None:
        if ref.sha256:
            _store(ref.sha256, cap, early)
        return early
    done, _ = _read(ref, paths, budget, timeout, cap)
    if done.settled and ref.sha256:
        _store(ref.sha256, cap, done)
    return done


# (URL, GPU) -> (paths, each one's compressed size, the answer): complete reads made while uv resolved,
# kept by the URL they read (the lock's read of the same URL takes them)
_EARLY: dict[tuple[str, coverage.Capability], tuple[tuple[str, ...], tuple[int, ...], WheelElves]] = {}
_early_lock = threading.Lock()


def read_early(
    ref: metadata.FileRef,
    paths: tuple[str, ...],
    budget: Budget,
    timeout: float,
    cap: coverage.Capability | None = None,
    stop: Callable[[], bool] = lambda: False,
) -> None:
    """read_one's read made ahead of the lock, on a budget of its own; a complete answer is kept in
    memory for the lock's read_one, which takes it only where it would have read it whole itself.
    `stop`: asked before each member (the lock no longer wants it: it ends there, keeping nothing)."""
    cap = cap or coverage.gb10()
    if ref.sha256 and _cached(ref.sha256, cap) is not None:
        return
    done, costs = _read(ref, paths, budget, timeout, cap, stop)
    if costs is not None:
        with _early_lock:
            _EARLY[(ref.url, cap)] = (paths, costs, done)


def _early_answer(
    url: str, cap: coverage.Capability, paths: tuple[str, ...], budget: Budget
) -> WheelElves | None:
    """The early read's answer, when this read would have taken every member as it did: each one's
    cost charged to `budget` in order; nothing charged when one does not fit."""
    with _early_lock:
        got = _EARLY.pop((url, cap), None)
    if got is None or got[0] != paths:
        return None
    left = budget.left
    if all(budget.take(cost) for cost in got[1]):
        return got[2]
    budget.left = left
    return None


def _read(
    ref: metadata.FileRef,
    paths: tuple[str, ...],
    budget: Budget,
    timeout: float,
    cap: coverage.Capability,
    stop: Callable[[], bool] = lambda: False,
) -> tuple[WheelElves, tuple[int, ...] | None]:
    """The answer, and the compressed size of each member when every one was read (else None). The
    answer is settled unless the lock's budget left a member unread that fits a file's limit, or the
    read failed."""
    out: list[tuple[str, elf.ElfInfo]] = []
    found: list[coverage.ObjectKernels] = []
    skipped: list[str] = []
    costs: list[int] = []
    cut = False  # a member within its own limits left unread: the lock's budget had run out
    ahead: _Ahead | None = None
    try:
        fh, _ = remote_zip.open_remote(ref.url, timeout, ref.sha256)
        with fh, zipfile.ZipFile(fh) as zf:
            ahead = _fetch_ahead(zf, paths, budget)
            for path in paths:
                if stop():
                    return WheelElves(tuple(out), "stopped", tuple(found), settled=False), None
                info = zf.getinfo(path)
                own_limit = (
                    len(out) >= MAX_OBJECTS
                    or info.file_size > MAX_INFLATED
                    or info.compress_size > PER_OBJECT
                )
                if own_limit or not budget.take(info.compress_size):
                    cut = cut or not own_limit
                    skipped.append(f"{path} ({info.compress_size >> 20} MiB compressed)")
                    continue
                costs.append(info.compress_size)
                if ahead is not None:
                    ahead.wait(info)
                got, gpu = _read_member(zf, info, cap)
                if isinstance(got, elf.ElfInfo):
                    out.append((path, got))
                    if gpu is not None:
                        found.append(gpu)
    except remote_zip.Unreadable as exc:
        return WheelElves(tuple(out), str(exc), tuple(found), settled=False), None
    except (zipfile.BadZipFile, zlib.error, KeyError, OSError, EOFError, ValueError) as exc:
        return WheelElves(tuple(out), f"not a readable zip: {exc}", tuple(found), settled=False), None
    finally:
        if ahead is not None:
            ahead.close()
    if skipped:
        more = f" and {len(skipped) - 1} more" if len(skipped) > 1 else ""
        why = (
            f"{skipped[0]}{more} past the read budget ({PER_OBJECT >> 20} MiB a file, {BUDGET >> 20} MiB "
            f"a lock, compressed; {MAX_OBJECTS} files a wheel)"
        )
        return WheelElves(tuple(out), why, tuple(found), settled=not cut), None
    return WheelElves(tuple(out), kernels=tuple(found)), tuple(costs)


def _fetch_ahead(zf: zipfile.ZipFile, paths: tuple[str, ...], budget: Budget) -> _Ahead | None:
    """What the read loop will take, to be fetched ahead: its decisions made on a copy of the budget,
    up to a name the zip lacks. Only for a wheel with at most MAX_OBJECTS of them (then the count leaves
    none out, whatever parses), so nothing is fetched that the loop does not read."""
    remote = remote_zip.range_file(zf)
    if remote is None or len(paths) > MAX_OBJECTS:
        return None
    trial = Budget(budget.left)
    infos = []
    for path in paths:
        info = zf.NameToInfo.get(path)
        if info is None:
            break
        if info.file_size <= MAX_INFLATED and trial.take(info.compress_size):
            infos.append(info)
    return _Ahead(remote, infos) if len(infos) > 1 else None


def read(
    refs: list[metadata.FileRef], files: dict[str, tuple[str, ...]], timeout: float = 60.0
) -> dict[str, WheelElves]:
    """key -> the ELF facts of its wheel's shared objects (those in `files`), in one budget for the lock."""
    budget = Budget()
    out: dict[str, WheelElves] = {}
    for ref in refs:  # in turn: the budget is spent in a known order, the same on every run
        if files.get(ref.key):
            out[ref.key] = read_one(ref, files[ref.key], budget, timeout)
    return out


def built_against(requirement: str) -> bool:
    """Whether a package that requires this one (a normalized name) may hold extensions built against a
    GPU stack: torch, or a CUDA library."""
    from sparkenv.cuda import rules as cuda_rules

    return requirement == "torch" or cuda_rules.is_cuda_relevant(requirement)


def is_gpu_wheel(key: str, version: str, files: tuple[str, ...], needs_gpu: Callable[[], bool]) -> bool:
    """Whose shared objects' ELF a lock reads: wheels with native code (`files`, from wheel_files) that
    require torch or a CUDA library (`needs_gpu`, asked last: extensions built against them), or that
    ship GPU code (CUDA sources, headers, cubins). Not the CUDA libraries themselves (their name or
    version says their major), nor torch's family (its metadata says whether it is a CUDA build), nor a
    wheel that carries a per-release CUDA library (judged by which one it carries)."""
    from sparkenv.cuda import rules as cuda_rules
    from sparkenv.lock import wheel_files
    from sparkenv.rules import cuda_builds, cuda_major, cuda_per_release

    return (
        bool(files)
        and not any(e.major for e in cuda_major.name_version_evidence(key, version))
        and key not in cuda_builds.families()
        and not cuda_per_release.libraries(files)
        and (cuda_rules.is_cuda_relevant(key) or wheel_files.ships_gpu_code(files) or needs_gpu())
    )

"""Which GPU targets a shared object's CUDA kernels were built for, from its fatbin headers.

Reads only headers: the fatbin header (magic 0xBA55ED50) and each entry's header, then skips the
payload by its size. Layout and flag bits were checked against `cuobjdump --list-elf/--list-ptx` (CUDA
13.0) on libraries nvcc 13.0 built for sm_90, sm_120, sm_120f, sm_121, sm_121a and compute_121a:
entry kind 1 is PTX, 2 a cubin, 8 LTO-IR (nvcc `code=lto_XY`); flags bit 0x100000 marks an arch-specific
target ("a"), 0x200000 a family target ("f").

`.nv_fatbin` is where nvcc puts kernels; large libraries (cuFFT) also embed fatbins as data
(`.ldata`, `.rodata`), which `scan(..., deep=True)` reads (the sections named in data/kernels.toml).
Caps on headers, entries and time (data/kernels.toml) bound the work on any input; a scan that hit
one says so (`complete=False`). Never raises on damaged input: a defect comes back as a reason.
"""

from __future__ import annotations

import array
import mmap
import os
import re
import struct
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from sparkenv.cuda import elf
from sparkenv.cuda.targets import KernelTarget
from sparkenv.knowledge import kernels

if TYPE_CHECKING:
    from sparkenv.knowledge.records.kernels import Limits

FATBIN_MAGIC = 0xBA55ED50
_MAGIC = struct.pack("<I", FATBIN_MAGIC)
_WELL_FORMED = struct.pack("<IHH", FATBIN_MAGIC, 1, 16)  # magic, version 1, a 16-byte header
_HEADER_LEN = 16
_HEAD = struct.Struct("<IHHQ")  # magic, version, header size, size of what follows
_ENTRY = struct.Struct(
    "<HHIQIIHHIIIQ"
)  # kind, ?, header size, payload size, csize, ?, minor, major, arch, …, flags
_ARCH_SPECIFIC, _FAMILY = 0x100000, 0x200000
_KINDS = {1: "compute", 2: "sm", 8: "lto"}


@dataclass
class KernelScan:
    """What one file's fatbins hold. `complete` is False when a cap stopped the reader or a section
    was damaged: then the targets are a lower bound and must not be judged as missing."""

    targets: set[KernelTarget] = field(default_factory=set)
    headers: int = 0
    entries: int = 0
    sections: list[str] = field(default_factory=list)  # the sections where fatbins were found
    payload: dict[KernelTarget, int] = field(default_factory=dict)  # bytes per target, from entry headers
    fatbin_bytes: int = 0  # what the fatbin headers found span
    complete: bool = True
    problem: str | None = None  # why not complete, or why nothing could be read
    has_nv_fatbin: bool = False
    # kernel_names' visitor: called with (kind, arch, flags, payload offset, payload size) for each entry
    sink: Callable[[int, int, int, int, int], None] | None = field(default=None, repr=False, compare=False)


def read_targets(path: str) -> list[KernelTarget] | str:
    """Targets of every kernel image in `path`'s .nv_fatbin, or a one-line reason when they cannot be
    read (kept for the gate's NVFP4 check; `scan` is the full reader)."""
    found = scan(path, deep=False)
    if found.problem and not found.targets and found.headers == 0:
        return found.problem
    if found.problem and "too many" in found.problem:
        return "malformed fatbin (too many entries)"
    return sorted(found.targets)


def parse_targets(read: elf.Reader) -> list[KernelTarget] | str:
    found = scan_reader(read, deep=False)
    if found.problem and not found.targets:
        return found.problem
    return sorted(found.targets)


def scan(path: str, deep: bool = False, limits: Limits | None = None, mapped: bool = False) -> KernelScan:
    """Read `path`'s fatbins: .nv_fatbin, and with `deep` the data sections too. `mapped`: through an
    mmap of the file, nothing copied (cuFFT's deep read copied 249 MB through pread). Only for a process
    that may die: a file cut short while it is mapped kills the reader with SIGBUS (the audit's workers,
    whose objects the audit then reads itself, by pread)."""
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | getattr(os, "O_CLOEXEC", 0))
    except OSError as exc:
        return KernelScan(complete=False, problem=f"unreadable: {exc.strerror}")
    whole = _map(fd) if mapped else None
    try:
        if whole is not None:
            found = scan_reader(lambda offset, size: whole[offset : offset + size], deep, limits, whole)
        else:
            found = scan_reader(lambda offset, size: os.pread(fd, size, offset), deep, limits)
        if deep and found.complete:
            sparse_fatbins(found, os.fstat(fd).st_size)
        return found
    except OSError as exc:
        return KernelScan(complete=False, problem=f"unreadable: {exc.strerror}")
    finally:
        if whole is not None:
            whole.close()
        os.close(fd)


def _map(fd: int) -> mmap.mmap | None:
    """The file mapped for reading; None where it cannot be (empty, not a regular file): read by pread."""
    try:
        return mmap.mmap(fd, 0, access=mmap.ACCESS_READ)
    except (OSError, ValueError):
        return None


def scan_reader(
    read: elf.Reader,
    deep: bool = False,
    limits: Limits | None = None,
    whole: mmap.mmap | None = None,
    sink: Callable[[int, int, int, int, int], None] | None = None,
) -> KernelScan:
    """`whole`: the file's bytes as one buffer (what `read` reads from), searched in place. `sink`: called
    for each entry as the walk passes it (kernel_names)."""
    limits = limits or kernels().limits
    out = KernelScan(sink=sink)
    sections = elf.list_sections(read)
    if isinstance(sections, str):
        out.complete, out.problem = False, sections
        return out
    wanted = elf.nv_fatbin_sections(sections)
    out.has_nv_fatbin = bool(wanted)
    if deep:
        names = kernels().sections.data
        wanted += [s for s in sections if s.name in names and s.type == elf.SHT_PROGBITS]
    budget = _Budget(limits)
    window = _Window(read) if whole is None else _Whole(read, whole)
    for section in wanted:
        before = out.headers
        align = 8 if section.name == ".nv_fatbin" else 1
        try:
            problem = _entries(window, section.offset, section.size, out, budget, align)
        except (struct.error, OverflowError, ValueError) as exc:
            problem = f"malformed fatbin ({exc.__class__.__name__})"
        if out.headers > before:
            out.sections.append(section.name)
        if problem:
            out.complete = False
            out.problem = f"{section.name}: {problem}"
            if budget.exhausted:
                break
    return out


def sparse_fatbins(found: KernelScan, file_size: int) -> None:
    """A large library whose fatbins span almost none of it keeps its kernels where this reader does not
    look (libcufft.so.12 12.0.0.61: one 672-byte fatbin in 286 MB): what was read is then not proof that
    a target is missing. Thresholds in data/kernels.toml [sparse]."""
    rule = kernels().sparse
    if file_size >= rule.min_file_bytes and found.fatbin_bytes < rule.max_fatbin_share * file_size:
        found.complete = False
        found.problem = (
            f"its fatbins span {found.fatbin_bytes} bytes of {file_size / 1e6:.0f} MB: the library keeps its "
            "kernels in a form sparkenv does not read"
        )


class _Budget:
    def __init__(self, limits: Limits) -> None:
        self.limits = limits
        self.stop_at = time.monotonic() + limits.max_seconds
        self.exhausted = False
        self.why = ""

    def check(self, scan: KernelScan) -> str | None:
        if scan.headers > self.limits.max_headers:
            self.exhausted = True
            return f"stopped after {self.limits.max_headers} fatbin headers (too many headers)"
        if scan.entries > self.limits.max_entries:
            self.exhausted = True
            return f"stopped after {self.limits.max_entries} kernel entries (too many entries)"
        if self.late():
            return self.why
        return None

    def late(self) -> bool:
        if time.monotonic() > self.stop_at:
            self.exhausted = True
            self.why = f"stopped after {self.limits.max_seconds:g} s"
        return self.exhausted


class _Window:
    """Reads through a window: a fatbin holds thousands of small entries and padding between
    compilation units: one pread per header and an 8-byte step through padding are slow on a real
    torch (benchmarks/fatbin_vs_cuobjdump.py).

    A miss near the window's end reads a full window (the entries that follow); a miss far from it (a
    jump over a large payload) reads a small one, and a search takes what the window already holds
    before reading on: a fixed read per miss copies far more than the headers for the large CUDA
    libraries (benchmarks/kernel_reads.py)."""

    NEAR = 1 << 12  # what a far miss reads: an entry header and the few that may follow it
    # A search that found nothing in a window reads twice as much next time, up to this: cuFFT 12.0's
    # 249 MB of .ldata hold almost no fatbin, and 64 KiB reads made 3,800 calls of Python work.
    FAR = 1 << 22

    def __init__(self, read: elf.Reader, size: int = 1 << 16) -> None:
        self._read, self._size, self._start, self._data = read, size, -1, b""
        self._search = size  # what the next search reads when the window is used up

    def next_magic(self, offset: int, end: int, base: int, budget: _Budget, align: int = 8) -> int:
        """The next offset from `offset`, `align`-byte aligned from `base`, where a fatbin header may
        start. nvcc aligns fatbins to 8 in .nv_fatbin; data sections are searched at any offset, for a
        well-formed header only (magic, version 1, 16 bytes). The search runs at C speed whatever the
        bytes (a flood of magic numbers off the 8-byte grid cost one Python step each, for minutes), and
        checks the time budget once per window: past it, `end` comes back and the budget says why."""
        while offset < end:
            if budget.late():
                return end
            if align == 8:
                offset += (base - offset) % 8
            data, rel = self.ahead(offset, end)
            avail = min(len(data) - rel, end - offset, self.FAR)
            if avail < _HEADER_LEN:
                return end
            if align == 8:
                usable = avail // 8 * 8
                at = data.find(_MAGIC, rel, rel + usable)  # in place; most hits are on the grid
                if at < 0:
                    offset += usable
                    self._missed()
                    continue
                self._search = self._size
                if (at - rel) % 8 == 0:
                    return offset + at - rel
                span = min(usable, self._size)  # a hit off the grid: every grid word of a window at once
                words = array.array("I")
                words.frombytes(data[rel : rel + span])
                if sys.byteorder != "little":
                    words.byteswap()
                try:
                    return offset + 8 * words[0::2].index(FATBIN_MAGIC)
                except ValueError:
                    offset += span
            else:
                at = data.find(_WELL_FORMED, rel, rel + avail)
                if at >= 0:
                    self._search = self._size
                    return offset + at - rel
                offset += avail - len(_WELL_FORMED) + 1
                self._missed()
        return end

    def _missed(self) -> None:
        self._search = min(self._search * 2, self.FAR)

    def ahead(self, offset: int, end: int) -> tuple[bytes, int]:
        """(buffer, position) of the bytes from `offset` for a search: the window itself when it holds
        at least a header from there (searched in place, not copied), else a fresh full window."""
        rel = offset - self._start
        if self._start >= 0 and rel >= 0 and len(self._data) - rel >= _HEADER_LEN:
            return self._data, rel
        self._start, self._data = offset, self._read(offset, min(self._search, end - offset))
        return self._data, 0

    def view(self, offset: int, n: int) -> tuple[bytes, int]:
        """(buffer, position): `n` bytes at `offset` are buffer[position:position + n] (fewer at the end
        of the file), for struct's unpack_from without a copy."""
        rel = offset - self._start
        if self._start < 0 or rel < 0 or rel + n > len(self._data):
            near = self._start >= 0 and 0 <= offset - (self._start + len(self._data)) < self._size
            size = self._size if near else self.NEAR
            self._start, self._data, rel = offset, self._read(offset, max(n, size)), 0
        return self._data, rel

    def __call__(self, offset: int, n: int) -> bytes:
        data, rel = self.view(offset, n)
        return data[rel : rel + n]


class _Whole(_Window):
    """The whole file as the window (a mapped file): every view and search in place, nothing copied;
    past its end, what `read` gives (short, as pread's)."""

    def __init__(self, read: elf.Reader, whole: mmap.mmap) -> None:
        super().__init__(read)
        self._start, self._whole = 0, whole

    def ahead(self, offset: int, end: int) -> tuple[Any, int]:
        if offset >= 0 and len(self._whole) - offset >= _HEADER_LEN:
            return self._whole, offset
        return self._read(offset, min(self._size, end - offset)), 0

    def view(self, offset: int, n: int) -> tuple[Any, int]:
        if offset >= 0 and offset + n <= len(self._whole):
            return self._whole, offset
        return self._read(offset, n), 0


def _entries(
    read: _Window, start: int, size: int, out: KernelScan, budget: _Budget, align: int = 8
) -> str | None:
    tally: dict[tuple[int, int, int], int] = {}  # (kind, arch, variant bits) -> payload bytes
    try:
        return _walk(read, start, size, out, budget, align, tally)
    finally:
        for (kind, arch, bits), payload in tally.items():
            variant = "a" if bits & _ARCH_SPECIFIC else "f" if bits & _FAMILY else ""
            target = KernelTarget(_KINDS[kind], arch, variant)
            out.targets.add(target)
            out.payload[target] = out.payload.get(target, 0) + payload


def _walk(
    read: _Window,
    start: int,
    size: int,
    out: KernelScan,
    budget: _Budget,
    align: int,
    tally: dict[tuple[int, int, int], int],
) -> str | None:
    pos, end = start, start + size
    view, unpack_from = read.view, _HEAD.unpack_from
    while pos + 16 <= end:
        data, rel = view(pos, 16)  # unpacked where it lies in the window: no copy, one call
        if len(data) - rel < 16:
            return "truncated fatbin"
        magic, version, header_size, fat_size = unpack_from(data, rel)
        if magic != FATBIN_MAGIC or (align == 1 and (version, header_size) != (1, 16)):
            # padding or other data: skip it at C speed. Off nvcc's 8-byte grid (data sections) only a
            # well-formed header (version 1, 16 bytes) counts, so four stray bytes are not a fatbin.
            pos = read.next_magic(pos + (8 if align == 8 else 1), end, start, budget, align)
            if budget.exhausted:
                return budget.why
            continue
        out.headers += 1
        out.fatbin_bytes += header_size + fat_size
        if out.headers % 256 == 0 or out.headers > budget.limits.max_headers:
            stop = budget.check(out)
            if stop:
                return stop
        entry, stop_at = pos + header_size, min(end, pos + header_size + fat_size)
        stop = _kernel_entries(read, entry, stop_at, out, budget, tally)
        if stop:
            return stop
        pos = max(stop_at, pos + 16)
    return None


def _kernel_entries(
    read: _Window,
    entry: int,
    stop_at: int,
    out: KernelScan,
    budget: _Budget,
    tally: dict[tuple[int, int, int], int],
) -> str | None:
    """The entry headers of one fatbin, payloads skipped: the reader's inner loop (tens of thousands of
    entries in a torch venv), so the window's buffer is read in place and the count kept in a local."""
    size, unpack_from, most = _ENTRY.size, _ENTRY.unpack_from, budget.limits.max_entries
    entries, sink = out.entries, out.sink
    try:
        while entry + size <= stop_at:
            entries += 1
            if entries % 1024 == 0 or entries > most:
                out.entries = entries
                stop = budget.check(out)
                if stop:
                    return stop
            data, rel = read.view(entry, size)
            if len(data) - rel < size:
                return "truncated fatbin entry"
            kind, _, ehs, payload, _, _, _, _, arch, _, _, flags = unpack_from(data, rel)
            if ehs < size:
                return "malformed fatbin entry header"
            if kind in _KINDS:  # plain tuples here: KernelTargets are made once, in _entries
                key = (kind, arch, flags & (_ARCH_SPECIFIC | _FAMILY))
                tally[key] = tally.get(key, 0) + payload
                if sink is not None:
                    sink(kind, arch, flags, entry + ehs, min(payload, stop_at - entry - ehs))
            entry += ehs + payload
        return None
    finally:
        out.entries = entries


# ---------------------------------------------------------------------------------------------------
# Which kernels a shared object's GPU code defines (sparkenv attest: a kernel that ran -> its library)

_COMPRESSED = 0x2000 | 0x8000  # entry flags: the payload is compressed (LZ4; zstd, nvcc's CUDA 13 default)
_KIND_PTX, _KIND_CUBIN = 1, 2
_PTX_ENTRY = re.compile(rb"\.entry\s+([A-Za-z_$][\w$]*)")


@dataclass
class KernelNames:
    """The kernels defined in one file's fatbins, by mangled name (cubins' symbol tables; PTX's `.entry`
    lines): what could be read. `compressed` entries were passed over (no decompressor here), so a kernel
    that is not listed may still be defined there: `complete` is then False."""

    names: set[str] = field(default_factory=set)
    cubins: int = 0
    ptx: int = 0
    compressed: int = 0
    complete: bool = True
    problem: str | None = None


def kernel_names(path: str, limits: Limits | None = None) -> KernelNames:
    """Every kernel `path`'s `.nv_fatbin` defines, read through the same walk as `scan` (its caps on
    headers, entries and time hold), each uncompressed cubin's symbol table read where it lies (its
    header, section table, symbol and string tables: never its code); PTX is read whole up to
    data/kernels.toml's [limits] max_symbol_bytes in all."""
    limits = limits or kernels().limits
    out = KernelNames()
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | getattr(os, "O_CLOEXEC", 0))
    except OSError as exc:
        return KernelNames(complete=False, problem=f"unreadable: {exc.strerror}")
    budget = [limits.max_symbol_bytes]

    def pread(offset: int, size: int) -> bytes:
        return os.pread(fd, size, offset)

    def visit(kind: int, _arch: int, flags: int, at: int, size: int) -> None:
        if flags & _COMPRESSED:
            out.compressed += 1
            return
        if kind == _KIND_CUBIN:
            found = elf.kernel_symbols(_Slice(pread, at, size, budget))
            if isinstance(found, str):
                out.complete, out.problem = False, f"a cubin at {at}: {found}"
                return
            out.cubins += 1
            out.names.update(found)
        elif kind == _KIND_PTX and 0 < size <= budget[0]:
            budget[0] -= size
            out.ptx += 1
            out.names.update(m.decode("ascii", "replace") for m in _PTX_ENTRY.findall(pread(at, size)))
        elif kind == _KIND_PTX:
            out.complete, out.problem = False, "PTX past the bytes read for kernel names"

    try:
        found = scan_reader(pread, deep=False, limits=limits, sink=visit)
    except OSError as exc:
        found = KernelScan(complete=False, problem=f"unreadable: {exc.strerror}")
    finally:
        os.close(fd)
    if not found.complete:
        out.complete, out.problem = False, found.problem
    if out.compressed:
        out.complete = False
        out.problem = out.problem or f"{out.compressed} compressed fatbin entries not read"
    return out


class _Slice:
    """A reader over one entry's payload inside the file: offsets from its start, nothing read past its
    end, every byte counted against the budget shared by the file's entries."""

    def __init__(self, read: elf.Reader, start: int, size: int, budget: list[int]) -> None:
        self.read, self.start, self.size, self.budget = read, start, size, budget

    def __call__(self, offset: int, size: int) -> bytes:
        if offset < 0 or offset >= self.size:
            return b""
        size = min(size, self.size - offset, max(self.budget[0], 0))
        self.budget[0] -= size
        return self.read(self.start + offset, size) if size > 0 else b""

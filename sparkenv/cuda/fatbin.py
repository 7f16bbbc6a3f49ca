"""Which GPU targets a shared object's CUDA kernels were built for, from its `.nv_fatbin` section.

Reads only headers: the fatbin header (magic 0xBA55ED50) and each entry's header, then skips the
payload. Layout and flag bits were checked against `cuobjdump --list-elf/--list-ptx` (CUDA 13.0) on
libraries nvcc 13.0 built for sm_90, sm_120, sm_120f, sm_121, sm_121a and compute_121a:
entry flags bit 0x100000 marks an arch-specific target ("a"), 0x200000 a family target ("f").
Never raises on damaged input: a defect comes back as a reason.
"""

from __future__ import annotations

import os
import struct
from dataclasses import dataclass

from sparkenv.cuda import elf

FATBIN_MAGIC = 0xBA55ED50
_MAGIC_BYTES = struct.pack("<I", FATBIN_MAGIC)
_ENTRY = struct.Struct(
    "<HHIQIIHHIIIQ"
)  # kind, ?, header size, payload size, csize, ?, minor, major, arch, …, flags
_ARCH_SPECIFIC, _FAMILY = 0x100000, 0x200000
_MAX_ENTRIES = 100_000


@dataclass(frozen=True, order=True)
class KernelTarget:
    kind: str  # "sm" (a cubin: machine code) or "compute" (PTX, compiled by the driver at load)
    arch: int  # 90, 120, 121 …
    variant: str  # "", "a" (arch-specific) or "f" (family)

    @property
    def name(self) -> str:
        return f"{self.kind}_{self.arch}{self.variant}"


def read_targets(path: str) -> list[KernelTarget] | str:
    """Targets of every kernel image in `path`, or a one-line reason when they cannot be read."""
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | getattr(os, "O_CLOEXEC", 0))
    except OSError as exc:
        return f"unreadable: {exc.strerror}"
    try:
        return parse_targets(lambda offset, size: os.pread(fd, size, offset))
    except OSError as exc:
        return f"unreadable: {exc.strerror}"
    finally:
        os.close(fd)


def parse_targets(read: elf.Reader) -> list[KernelTarget] | str:
    try:
        section = elf.find_section(read, ".nv_fatbin")
        if isinstance(section, str):
            return section
        if section is None:
            return []
        return _entries(read, *section)
    except (struct.error, OverflowError, ValueError) as exc:
        return f"malformed fatbin ({exc.__class__.__name__})"


class _Window:
    """Reads through a 64 KiB window: a fatbin holds thousands of small entries and padding between
    compilation units. One pread per header and an 8-byte step through padding made the gate's NVFP4 check
    take 7.4 s on a real torch 2.11 (4.3 s without it); with the window and next_magic, 5.3 s."""

    def __init__(self, read: elf.Reader, size: int = 1 << 16) -> None:
        self._read, self._size, self._start, self._data = read, size, -1, b""

    def next_magic(self, offset: int, end: int, base: int) -> int:
        """The next offset from `offset`, 8-byte aligned from `base`, where a fatbin header may start."""
        while offset < end:
            chunk = self(offset, min(self._size, end - offset))
            if not chunk:
                return end
            at = chunk.find(_MAGIC_BYTES)
            while at >= 0 and (offset + at - base) % 8:
                at = chunk.find(_MAGIC_BYTES, at + 1)
            if at >= 0:
                return offset + at
            offset += max(8, len(chunk) - len(_MAGIC_BYTES)) & ~7
        return end

    def __call__(self, offset: int, n: int) -> bytes:
        rel = offset - self._start
        if self._start < 0 or rel < 0 or rel + n > len(self._data):
            self._start, self._data, rel = offset, self._read(offset, max(n, self._size)), 0
        return self._data[rel : rel + n]


def _entries(read: elf.Reader, start: int, size: int) -> list[KernelTarget] | str:
    read = _Window(read)
    found: set[KernelTarget] = set()
    pos, end, count = start, start + size, 0
    while pos + 16 <= end:
        head = read(pos, 16)
        if len(head) < 16:
            return "truncated fatbin"
        magic, _, header_size, fat_size = struct.unpack("<IHHQ", head)
        if magic != FATBIN_MAGIC:
            pos = read.next_magic(
                pos + 8, end, start
            )  # padding between compilation units: skip it at C speed
            continue
        entry, stop = pos + header_size, min(end, pos + header_size + fat_size)
        while entry + _ENTRY.size <= stop:
            count += 1
            if count > _MAX_ENTRIES:
                return "malformed fatbin (too many entries)"
            raw = read(entry, _ENTRY.size)
            if len(raw) < _ENTRY.size:
                return "truncated fatbin entry"
            kind, _, ehs, payload, _, _, _, _, arch, _, _, flags = _ENTRY.unpack(raw)
            if ehs < _ENTRY.size:
                return "malformed fatbin entry header"
            if kind in (1, 2):
                variant = "a" if flags & _ARCH_SPECIFIC else "f" if flags & _FAMILY else ""
                found.add(KernelTarget("compute" if kind == 1 else "sm", arch, variant))
            entry += ehs + payload
        pos = max(stop, pos + 16)
    return sorted(found)

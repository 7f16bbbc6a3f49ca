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


def _entries(read: elf.Reader, start: int, size: int) -> list[KernelTarget] | str:
    found: set[KernelTarget] = set()
    pos, end, count = start, start + size, 0
    while pos + 16 <= end:
        head = read(pos, 16)
        if len(head) < 16:
            return "truncated fatbin"
        magic, _, header_size, fat_size = struct.unpack("<IHHQ", head)
        if magic != FATBIN_MAGIC:
            pos += 8  # headers are 8-byte aligned; padding sits between compilation units
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

"""A small ELF reader: machine, DT_SONAME and DT_NEEDED, from headers and the dynamic section only.

Whole files are never read: a 2 GB libtorch_cuda.so costs a handful of pread calls. The parser never
raises: a damaged or truncated file comes back as an ElfDefect naming the problem, so one bad file
cannot stop an audit.
"""

from __future__ import annotations

import os
import stat
import struct
from collections.abc import Callable
from dataclasses import dataclass, field, replace

MACHINES = {
    3: "i386",
    8: "mips",
    20: "ppc",
    21: "ppc64",
    22: "s390x",
    40: "arm",
    62: "x86_64",
    183: "aarch64",
    243: "riscv64",
    258: "loongarch64",
}

_MAX_TABLE = 4 << 20  # no sane section or dynamic table is larger; bounds work on hostile input
_MAX_NAME = 4096
_DT_NULL, _DT_NEEDED, _DT_STRTAB, _DT_STRSZ, _DT_SONAME = 0, 1, 5, 10, 14
_DT_RPATH, _DT_RUNPATH = 15, 29
_SHT_DYNAMIC, _PT_LOAD, _PT_DYNAMIC = 6, 1, 2


@dataclass(frozen=True)
class ElfInfo:
    machine: str
    soname: str | None
    needed: tuple[str, ...]
    # Search paths as written ($ORIGIN unexpanded); the loader ignores RPATH when RUNPATH is present.
    rpath: tuple[str, ...] = ()
    runpath: tuple[str, ...] = ()
    # Whether the object has a `.nv_fatbin` the fatbin reader would read (nv_fatbin_sections); None:
    # not known (read from bytes, or the section table could not be read). Not part of equality: it
    # is a hint that lets an audit skip the fatbin reader's second open of the ~95 % of objects nvcc
    # did not build; a None still gets the full read.
    nv_fatbin: bool | None = field(default=None, compare=False)


@dataclass(frozen=True)
class ElfDefect:
    reason: str


class _Bad(Exception):
    pass


Reader = Callable[[int, int], bytes]


def parse(read: Reader) -> ElfInfo | ElfDefect | None:
    """Parse through `read(offset, size)`; None when the bytes are not ELF at all."""
    try:
        return _parse(read)
    except _Bad as exc:
        return ElfDefect(str(exc))
    except (struct.error, ValueError, OverflowError, MemoryError) as exc:
        return ElfDefect(f"malformed ELF ({exc.__class__.__name__})")


def parse_bytes(data: bytes) -> ElfInfo | ElfDefect | None:
    return parse(lambda offset, size: data[offset : offset + size])


def read_file(path: str, nv_fatbin: bool = False) -> ElfInfo | ElfDefect | None:
    """Read one file's ELF facts. OSError (missing, unreadable, symlink loop) is the caller's to report.
    `nv_fatbin`: also say whether it has a .nv_fatbin (ElfInfo.nv_fatbin), for a caller that reads
    GPU code next."""
    # O_NONBLOCK: a FIFO placed where a library should be must not hang the audit.
    fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | getattr(os, "O_CLOEXEC", 0))
    try:
        if not stat.S_ISREG(os.fstat(fd).st_mode):
            return ElfDefect("not a regular file")
        done: dict[tuple[int, int], bytes] = {}

        def read(offset: int, size: int) -> bytes:
            # the ELF header and the section header table are read again for the section listing
            data = done.get((offset, size))
            if data is None:
                data = os.pread(fd, size, offset)
                if nv_fatbin and len(done) < 4:
                    done[offset, size] = data
            return data

        info = parse(read)
        if nv_fatbin and isinstance(info, ElfInfo):
            info = replace(info, nv_fatbin=_has_nv_fatbin(read))
        return info
    finally:
        os.close(fd)


def _read_exact(read: Reader, offset: int, size: int, what: str) -> bytes:
    if offset < 0 or size < 0 or size > _MAX_TABLE:
        raise _Bad(f"{what} out of range")
    data = read(offset, size)
    if len(data) != size:
        raise _Bad(f"truncated: {what} ends past the end of the file")
    return data


def _parse(read: Reader) -> ElfInfo | None:
    head = read(0, 64)
    if head[:4] != b"\x7fELF":
        return None
    if len(head) < 6:
        raise _Bad("truncated: ELF identification incomplete")
    cls, data = head[4], head[5]
    if data not in (1, 2):
        raise _Bad(f"unknown ELF data encoding {data}")
    if cls not in (1, 2):
        raise _Bad(f"unknown ELF class {cls}")
    end = "<" if data == 1 else ">"
    is64 = cls == 2
    hfmt = end + ("16xHHIQQQIHHHHHH" if is64 else "16xHHIIIIIHHHHHH")
    if len(head) < struct.calcsize(hfmt):
        raise _Bad("truncated: ELF header incomplete")
    (_, e_machine, _, _, phoff, shoff, _, _, phentsize, phnum, shentsize, shnum, _) = struct.unpack_from(
        hfmt, head
    )
    machine = MACHINES.get(e_machine, f"EM_{e_machine}")

    dynamic = _dynamic_from_sections(read, end, is64, shoff, shentsize, shnum)
    if dynamic is None:
        dynamic = _dynamic_from_segments(read, end, is64, phoff, phentsize, phnum)
    if dynamic is None:  # static executable or relocatable object: nothing linked
        return ElfInfo(machine, None, ())
    dyn_bytes, str_offset, str_size = dynamic

    dfmt = end + ("qQ" if is64 else "iI")
    dsize = struct.calcsize(dfmt)
    needed: list[str] = []
    soname: str | None = None
    paths: dict[int, tuple[str, ...]] = {}
    for tag, val in struct.iter_unpack(dfmt, dyn_bytes[: len(dyn_bytes) - len(dyn_bytes) % dsize]):
        if tag == _DT_NULL:
            break
        if tag == _DT_NEEDED:
            needed.append(_string(read, str_offset, str_size, val))
        elif tag == _DT_SONAME:
            soname = _string(read, str_offset, str_size, val)
        elif tag in (_DT_RPATH, _DT_RUNPATH):
            paths[tag] = tuple(p for p in _string(read, str_offset, str_size, val).split(":") if p)
    return ElfInfo(machine, soname, tuple(needed), paths.get(_DT_RPATH, ()), paths.get(_DT_RUNPATH, ()))


def _dynamic_from_sections(
    read: Reader, end: str, is64: bool, shoff: int, shentsize: int, shnum: int
) -> tuple[bytes, int, int | None] | None:
    sfmt = end + ("IIQQQQIIQQ" if is64 else "IIIIIIIIII")
    ssize = struct.calcsize(sfmt)
    if not shoff or not shnum or shentsize < ssize:
        return None
    table = _read_exact(read, shoff, shnum * shentsize, "section header table")
    sections = [struct.unpack_from(sfmt, table, i * shentsize) for i in range(shnum)]
    for _, sh_type, _, _, offset, size, link, _, _, _ in sections:
        if sh_type != _SHT_DYNAMIC:
            continue
        if link >= shnum:
            raise _Bad("dynamic section links to a missing string table")
        str_section = sections[link]
        return _read_exact(read, offset, size, "dynamic section"), str_section[4], str_section[5]
    return None


def _dynamic_from_segments(
    read: Reader, end: str, is64: bool, phoff: int, phentsize: int, phnum: int
) -> tuple[bytes, int, int | None] | None:
    pfmt = end + ("IIQQQQQQ" if is64 else "IIIIIIII")
    psize = struct.calcsize(pfmt)
    if not phoff or not phnum or phentsize < psize:
        return None
    table = _read_exact(read, phoff, phnum * phentsize, "program header table")
    loads: list[tuple[int, int, int]] = []  # (vaddr, offset, filesz)
    dyn: tuple[int, int] | None = None
    for i in range(phnum):
        fields = struct.unpack_from(pfmt, table, i * phentsize)
        if is64:
            p_type, _, p_offset, p_vaddr, _, p_filesz, _, _ = fields
        else:
            p_type, p_offset, p_vaddr, _, p_filesz, _, _, _ = fields
        if p_type == _PT_LOAD:
            loads.append((p_vaddr, p_offset, p_filesz))
        elif p_type == _PT_DYNAMIC:
            dyn = (p_offset, p_filesz)
    if dyn is None:
        return None
    dyn_bytes = _read_exact(read, dyn[0], dyn[1], "dynamic segment")
    dfmt = end + ("qQ" if is64 else "iI")
    strtab_vaddr = strsz = None
    for tag, val in struct.iter_unpack(
        dfmt, dyn_bytes[: len(dyn_bytes) - len(dyn_bytes) % struct.calcsize(dfmt)]
    ):
        if tag == _DT_NULL:
            break
        if tag == _DT_STRTAB:
            strtab_vaddr = val
        elif tag == _DT_STRSZ:
            strsz = val
    if strtab_vaddr is None:
        raise _Bad("dynamic segment has no string table")
    for vaddr, offset, filesz in loads:
        if vaddr <= strtab_vaddr < vaddr + filesz:
            return dyn_bytes, offset + (strtab_vaddr - vaddr), strsz
    raise _Bad("string table address is outside every loaded segment")


def _string(read: Reader, table_offset: int, table_size: int | None, index: int) -> str:
    if table_size is not None and index >= table_size:
        raise _Bad("dynamic entry points past its string table")
    limit = _MAX_NAME if table_size is None else min(_MAX_NAME, table_size - index)
    raw = read(table_offset + index, limit)
    nul = raw.find(b"\0")
    if nul < 0:
        raise _Bad("truncated: unterminated name in the string table")
    return raw[:nul].decode("utf-8", "replace")


def _names_reader(read: Reader, table_offset: int, table_size: int) -> Callable[[int], str]:
    """Names from the section-name table, read in one call (one pread per name cost an audit of 846
    objects ~29,000 reads). A table that cannot be read whole (truncated file, absurd size) is read
    name by name as before, so a damaged file gets the same reason."""
    if table_offset >= 0 and 0 < table_size <= _MAX_TABLE:
        table = read(table_offset, table_size)
        if len(table) == table_size:

            def from_table(index: int) -> str:
                if index >= table_size:
                    raise _Bad("dynamic entry points past its string table")
                nul = table.find(b"\0", index, index + _MAX_NAME)
                if nul < 0:
                    raise _Bad("truncated: unterminated name in the string table")
                return table[index:nul].decode("utf-8", "replace")

            return from_table
    return lambda index: _string(read, table_offset, table_size, index)


@dataclass(frozen=True)
class Section:
    name: str
    type: int
    flags: int
    offset: int
    size: int


SHT_PROGBITS, SHT_NOBITS = 1, 8


def list_sections(read: Reader, nv_fatbin_only: bool = False) -> list[Section] | str:
    """Every section header, or a one-line reason when the table is damaged. `nv_fatbin_only`: only
    what nv_fatbin_sections keeps, read and judged the same way (no object for the other sections)."""
    try:
        head = read(0, 64)
        if head[:4] != b"\x7fELF":
            return "not an ELF file"
        end = "<" if head[5] == 1 else ">"
        is64 = head[4] == 2
        hfmt = end + ("16xHHIQQQIHHHHHH" if is64 else "16xHHIIIIIHHHHHH")
        *_, shoff, _, _, _, _, shentsize, shnum, shstrndx = struct.unpack_from(hfmt, head)
        sfmt = end + ("IIQQQQIIQQ" if is64 else "IIIIIIIIII")
        if not shoff or not shnum or shentsize < struct.calcsize(sfmt) or shstrndx >= shnum:
            return []
        table = _read_exact(read, shoff, shnum * shentsize, "section header table")
        raw = [struct.unpack_from(sfmt, table, i * shentsize) for i in range(shnum)]
        names_at, names_size = raw[shstrndx][4], raw[shstrndx][5]
        name = _names_reader(read, names_at, names_size)
        if nv_fatbin_only:
            quick = _nv_fatbin_rows(read, raw, names_at, names_size)
            if quick is not None:
                return [Section(".nv_fatbin", row[1], row[2], row[4], row[5]) for row in quick]
            names = [name(row[0]) for row in raw]  # every name, as below: a bad one damages the table
            return [
                Section(n, row[1], row[2], row[4], row[5])
                for n, row in zip(names, raw, strict=True)
                if n == ".nv_fatbin" and row[1] != SHT_NOBITS
            ]
        return [
            Section(name(sh_name), sh_type, flags, offset, size)
            for sh_name, sh_type, flags, _, offset, size, *_ in raw
        ]
    except _Bad as exc:
        return str(exc)
    except (struct.error, ValueError, OverflowError, IndexError) as exc:
        return f"malformed ELF ({exc.__class__.__name__})"


def _nv_fatbin_rows(
    read: Reader, raw: list[tuple[int, ...]], at: int, size: int
) -> list[tuple[int, ...]] | None:
    """The rows nv_fatbin_sections would keep, when the names table is sound enough that naming each
    section cannot fail (read whole, ends with a NUL, every index inside it, no name of _MAX_NAME bytes):
    then a name is ".nv_fatbin" exactly where its bytes are ".nv_fatbin\\0". None: name them one by one."""
    if at < 0 or not 0 < size <= _MAX_TABLE or max(row[0] for row in raw) >= size:
        return None
    table = read(at, size)
    if len(table) != size or table[-1] != 0 or max(map(len, table.split(b"\0"))) >= _MAX_NAME:
        return None
    if b".nv_fatbin\0" not in table:
        return []
    return [r for r in raw if r[1] != SHT_NOBITS and table.startswith(b".nv_fatbin\0", r[0])]


def nv_fatbin_sections(sections: list[Section]) -> list[Section]:
    """The sections the fatbin reader reads first: `.nv_fatbin` with bytes in the file."""
    return [s for s in sections if s.name == ".nv_fatbin" and s.type != SHT_NOBITS]


def _has_nv_fatbin(read: Reader) -> bool | None:
    """What the fatbin reader's `has_nv_fatbin` will be, from the same section list; None when the
    file cannot be read again (the fatbin reader then reports it as before)."""
    try:
        sections = list_sections(read, nv_fatbin_only=True)
    except OSError:
        return None
    return isinstance(sections, list) and bool(nv_fatbin_sections(sections))


SHT_SYMTAB = 2
_STT_FUNC = 2
_STO_CUDA_ENTRY = 0x10  # st_other of a cubin's __global__ function: a kernel the host can launch


def kernel_symbols(read: Reader) -> list[str] | str:
    """The kernels a cubin (the ELF inside a fatbin entry) defines: its `.symtab`'s functions marked as CUDA
    entry points, by their (mangled) names; or a one-line reason. Reads the header, the section table, the
    symbol table and its string table, each bounded as every other table here."""
    sections = list_sections(read)
    if isinstance(sections, str):
        return sections
    try:
        head = read(0, 64)
        end, is64 = ("<" if head[5] == 1 else ">"), head[4] == 2
        sfmt = end + ("IIQQQQIIQQ" if is64 else "IIIIIIIIII")
        hfmt = end + ("16xHHIQQQIHHHHHH" if is64 else "16xHHIIIIIHHHHHH")
        *_, shoff, _, _, _, _, shentsize, shnum, _ = struct.unpack_from(hfmt, head)
        table = _read_exact(read, shoff, shnum * shentsize, "section header table")
        raw = [struct.unpack_from(sfmt, table, i * shentsize) for i in range(shnum)]
        symfmt = end + ("IBBHQQ" if is64 else "IIIBBH")
        symsize = struct.calcsize(symfmt)
        out: list[str] = []
        for _, sh_type, _, _, offset, size, link, _, _, entsize in raw:
            if sh_type != SHT_SYMTAB:
                continue
            if link >= shnum or (entsize and entsize < symsize):
                return "symbol table links to a missing string table"
            syms = _read_exact(read, offset, size, "symbol table")
            name = _names_reader(read, raw[link][4], raw[link][5])
            step = entsize or symsize
            for at in range(0, len(syms) - symsize + 1, step):
                fields = struct.unpack_from(symfmt, syms, at)
                st_name, info, other = fields[:3] if is64 else (fields[0], fields[3], fields[4])
                if info & 0xF == _STT_FUNC and other & _STO_CUDA_ENTRY and st_name:
                    out.append(name(st_name))
        return out
    except _Bad as exc:
        return str(exc)
    except (struct.error, ValueError, OverflowError, IndexError) as exc:
        return f"malformed ELF ({exc.__class__.__name__})"

"""The fatbin reader reads few bytes (one read of the section names, small reads past large payloads,
searches that use what is already read): it must find exactly what a plain read of the whole file
finds. The reference below loads each real nvcc-built object into memory and walks it byte by byte,
sharing no code with sparkenv/cuda/fatbin.py or elf.py's section listing."""

from __future__ import annotations

import os
import shutil
import struct
import subprocess
from pathlib import Path

import pytest

from sparkenv.cuda import elf, fatbin
from sparkenv.knowledge import kernels as kernels_data

MAGIC = 0xBA55ED50
KINDS = {1: "compute", 2: "sm", 8: "lto"}


def sections_of(data: bytes) -> list[tuple[str, int, int, int]]:
    """(name, type, offset, size) of every section of a 64-bit little-endian ELF, from the bytes."""
    (shoff,) = struct.unpack_from("<Q", data, 0x28)
    shentsize, shnum, shstrndx = struct.unpack_from("<HHH", data, 0x3A)
    raw = [struct.unpack_from("<IIQQQQIIQQ", data, shoff + i * shentsize) for i in range(shnum)]
    names_at = raw[shstrndx][4]
    out = []
    for name, kind, _, _, offset, size, *_ in raw:
        start = names_at + name
        out.append((data[start : data.index(b"\0", start)].decode(), kind, offset, size))
    return out


def whole_file_scan(path: Path, deep: bool) -> dict:
    """What a fatbin reader must report, found by visiting every candidate offset of the loaded file."""
    data = path.read_bytes()
    wanted = [s for s in sections_of(data) if s[0] == ".nv_fatbin" and s[1] != elf.SHT_NOBITS]
    if deep:
        names = kernels_data().sections.data
        wanted += [s for s in sections_of(data) if s[0] in names and s[1] == elf.SHT_PROGBITS]
    targets: dict[str, int] = {}
    headers = entries = spanned = 0
    found_in = []
    for name, _, start, size in wanted:
        step, pos, end, before = (8 if name == ".nv_fatbin" else 1), start, start + size, headers
        while pos + 16 <= end:
            magic, version, header_size, fat_size = struct.unpack_from("<IHHQ", data, pos)
            if magic != MAGIC or (step == 1 and (version, header_size) != (1, 16)):
                pos += step
                continue
            headers += 1
            spanned += header_size + fat_size
            entry, stop = pos + header_size, min(end, pos + header_size + fat_size)
            while entry + 64 <= stop:
                entries += 1
                kind, _, ehs, payload = struct.unpack_from("<HHIQ", data, entry)
                arch, flags = (
                    struct.unpack_from("<I", data, entry + 28)[0],
                    struct.unpack_from("<Q", data, entry + 40)[0],
                )
                if kind in KINDS:
                    variant = "a" if flags & 0x100000 else "f" if flags & 0x200000 else ""
                    target = f"{KINDS[kind]}_{arch}{variant}"
                    targets[target] = targets.get(target, 0) + payload
                entry += ehs + payload
            pos = max(stop, pos + 16)
        if headers > before:
            found_in.append(name)
    return {
        "payload": targets,
        "headers": headers,
        "entries": entries,
        "sections": found_in,
        "bytes": spanned,
    }


def as_read(path: Path, deep: bool) -> dict:
    scan = fatbin.scan(str(path), deep=deep)
    assert scan.complete, scan.problem
    return {
        "payload": {t.name: n for t, n in scan.payload.items()},
        "headers": scan.headers,
        "entries": scan.entries,
        "sections": scan.sections,
        "bytes": scan.fatbin_bytes,
    }


def many_kernels(root: Path, count: int) -> Path:
    """One nvcc-built object whose cubins are large (tens of KiB: `count` kernels), so the reader's
    jump past a payload is a far one."""
    src = root / f"many{count}.cu"
    body = "".join(
        f"__global__ void k{i}(float* x) {{ for (int j = 0; j < {i % 7 + 2}; ++j) "
        f"x[threadIdx.x + j] += {i}.f * x[j]; }}\n"
        for i in range(count)
    )
    src.write_text(body)
    out = root / f"libmany{count}.so"
    nvcc = shutil.which("nvcc")
    if nvcc is None:
        pytest.fail("nvcc (CUDA 13) is needed to build real kernels")
    args = [nvcc, "-shared", "-Xcompiler", "-fPIC", "-o", str(out), str(src)]
    for code in (
        "arch=compute_90,code=sm_90",
        "arch=compute_120,code=sm_120",
        "arch=compute_120,code=compute_120",
    ):
        args[1:1] = ["-gencode", code]
    subprocess.run(args, check=True, timeout=600, capture_output=True)
    return out


def spread(kernels, names: list[str], gap: int, section: str, offset: int = 0, stray: bool = False) -> Path:
    """Several real fatbins in one section, `gap` zero bytes apart (8-byte aligned), as large libraries
    lay out their compilation units; `offset` puts them off the 8-byte grid (a data section); `stray`
    fills the gaps with magic numbers off the grid, which are no fatbin."""
    blob = kernels.root / f"spread-{'-'.join(names)}-{gap}-{stray}.bin"
    parts = [kernels.fatbin(n).read_bytes() for n in names]
    filler = (b"\0\0\0\0" + struct.pack("<I", MAGIC)) * (gap // 8) if stray else b"\0" * gap
    blob.write_bytes(b"".join(p.ljust(-(-len(p) // 8) * 8, b"\0") + filler for p in parts))
    name = f"spread{gap}{section.strip('.')}{'stray' if stray else ''}"
    return kernels.with_section(kernels.plain(), section, blob, name, offset)


@pytest.fixture(scope="module")
def objects(kernels, tmp_path_factory) -> dict[str, Path]:
    root = tmp_path_factory.mktemp("reads")
    return {
        "fat": kernels.so("fat"),
        "ptx90": kernels.so("ptx90"),
        "lto90": kernels.so("lto90"),
        "large cubins": many_kernels(root, 400),
        "fatbins 100 KiB apart": spread(
            kernels, ["fat", "sm90", "ptx90", "sm120a"], 100 * 1024, ".nv_fatbin"
        ),
        "fatbins 5 KiB apart": spread(kernels, ["sm121a", "fat", "sm75"], 5 * 1024, ".nv_fatbin"),
        "stray magic between fatbins": spread(
            kernels, ["fat", "sm90", "sm75"], 3000 * 8, ".nv_fatbin", stray=True
        ),
        "in .ldata, off the grid": spread(kernels, ["fat", "sm120", "ptx90"], 70 * 1024 + 3, ".ldata", 5),
    }


@pytest.mark.parametrize("deep", [False, True])
@pytest.mark.parametrize(
    "name",
    [
        "fat",
        "ptx90",
        "lto90",
        "large cubins",
        "fatbins 100 KiB apart",
        "fatbins 5 KiB apart",
        "stray magic between fatbins",
        "in .ldata, off the grid",
    ],
)
def test_the_reader_finds_what_a_whole_file_read_finds(objects, name, deep):
    expected = whole_file_scan(objects[name], deep)
    assert as_read(objects[name], deep) == expected
    if name == "large cubins":  # the case the small reads are for: payloads larger than a window
        assert max(expected["payload"].values()) > 64 * 1024
    if name.startswith(("fatbins", "stray")):
        assert expected["headers"] >= 3  # every compilation unit of the section is found
    elif name != "in .ldata, off the grid" or deep:
        assert expected["headers"] >= 1


def test_section_names_come_from_one_read(objects):
    """The section listing reads the names table once and names every section as the bytes do."""
    path = objects["large cubins"]
    data = path.read_bytes()
    reads = []

    def read(offset: int, size: int) -> bytes:
        reads.append(size)
        return data[offset : offset + size]

    listed = elf.list_sections(read)
    assert not isinstance(listed, str)
    assert [(s.name, s.type, s.offset, s.size) for s in listed] == sections_of(data)
    assert len(reads) == 3  # ELF header, section header table, section names


@pytest.mark.parametrize("deep", [False, True])
def test_a_mapped_read_finds_what_a_pread_read_finds(objects, kernels, tmp_path, deep):
    """The audit's workers read through mmap (no copies): the same scan, field for field, on every object
    above, a header flood, a damaged file, an empty file and a FIFO (these two cannot be mapped: read
    by pread, as before)."""
    flood = kernels.with_section(kernels.plain(), ".ldata", kernels.header_flood(3000), "mflood")
    cut = tmp_path / "cut.so"
    cut.write_bytes(objects["fatbins 5 KiB apart"].read_bytes()[:20000])
    empty = tmp_path / "empty.so"
    empty.write_bytes(b"")
    fifo = tmp_path / "fifo.so"
    os.mkfifo(fifo)
    paths = [*objects.values(), flood, cut, empty, fifo]
    for path in paths:
        assert fatbin.scan(str(path), deep, mapped=True) == fatbin.scan(str(path), deep), path.name
    assert fatbin.scan(str(flood), deep, mapped=True).headers >= (3000 if deep else 0)


@pytest.mark.parametrize("caps", [(5, 10_000), (10_000, 7), (2999, 10_000)])
def test_a_mapped_read_stops_where_a_pread_read_stops(objects, kernels, caps):
    """The caps on headers and entries cut both readers at the same header, with the same reason."""
    from sparkenv.knowledge.records.kernels import Limits

    limits = Limits(caps[0], caps[1], 60.0)
    flood = kernels.with_section(kernels.plain(), ".ldata", kernels.header_flood(3000), "mflood")
    for path in [*objects.values(), flood]:
        for deep in (False, True):
            mapped = fatbin.scan(str(path), deep, limits, mapped=True)
            assert mapped == fatbin.scan(str(path), deep, limits), path.name
    stopped = fatbin.scan(str(flood), True, limits, mapped=True)
    assert stopped.complete is (caps[0] >= 3000)  # the flood's 3,000 headers, no entries
    many = fatbin.scan(str(objects["large cubins"]), False, limits, mapped=True)
    assert many.complete is (many.entries <= caps[1] and many.headers <= caps[0])

"""A first audit opens a shared object a second time (the fatbin reader) only when the ELF reader saw a
`.nv_fatbin` in it (`ElfInfo.nv_fatbin`). The hint must agree with the fatbin reader on every object,
damaged ones included, and an audit that uses it must say exactly what one without it says: real
nvcc-built and gcc-built objects, installed in a venv."""

from __future__ import annotations

import struct
from pathlib import Path

import pytest

from sparkenv.audit import run as audit_run
from sparkenv.cuda import elf, fatbin


def _damaged(base: Path, root: Path, name: str, cut: int | None = None, shstrndx: int | None = None) -> Path:
    data = bytearray(base.read_bytes())
    if shstrndx is not None:
        struct.pack_into("<H", data, 0x3E, shstrndx)  # e_shstrndx of a 64-bit little-endian ELF
    out = root / name
    out.write_bytes(bytes(data[:cut] if cut is not None else data))
    return out


@pytest.fixture(scope="module")
def objects(kernels, elves, tmp_path_factory) -> dict[str, Path]:
    root = tmp_path_factory.mktemp("hint")
    fat = kernels.so("fat")
    (shoff,) = struct.unpack_from("<Q", fat.read_bytes(), 0x28)
    return {
        "fat": fat,
        "sm90": kernels.so("sm90"),
        "ptx90": kernels.so("ptx90"),
        "lto90": kernels.so("lto90"),
        # the nvidia-cufft layout: .nv_fatbin with one cubin, the kernels as data in .ldata
        "cufft layout": kernels.with_section(
            kernels.so("sm75"), ".ldata", kernels.fatbin("fat"), "hcufft", 4
        ),
        # a fatbin only in a data section, no .nv_fatbin: the fatbin reader finds nothing to read
        "fatbin in .ldata only": kernels.with_section(
            kernels.plain(), ".ldata", kernels.fatbin("fat"), "hld"
        ),
        "gcc object": kernels.plain(),
        "stub": elves.stub("libhint.so.1"),
        "linked": elves.linked(("libhint.so.1",)),
        "aarch64": elves.linked(("libhint.so.1",), arch="aarch64"),
        # the section header table cut off; a section-name index past the table (the ELF reader
        # still reads the dynamic section, the section listing finds the table damaged)
        "section table cut": _damaged(fat, root, "cut.so", cut=shoff + 10),
        "names index past the table": _damaged(fat, root, "badidx.so", shstrndx=0xFFF0),
    }


def test_the_hint_is_what_the_fatbin_reader_finds(objects):
    seen: dict[bool, list[str]] = {True: [], False: []}
    for name, path in objects.items():
        info = elf.read_file(str(path), nv_fatbin=True)
        if not isinstance(info, elf.ElfInfo):
            continue  # the audit never reads kernels of these
        assert info.nv_fatbin is not None, name
        assert info.nv_fatbin == fatbin.scan(str(path)).has_nv_fatbin, name
        seen[info.nv_fatbin].append(name)
    assert set(seen[True]) >= {"fat", "sm90", "ptx90", "lto90", "cufft layout"}
    assert set(seen[False]) >= {
        "gcc object",
        "stub",
        "linked",
        "fatbin in .ldata only",
        "names index past the table",
    }
    # a cut section table is the ELF reader's defect: the audit reports it and reads no kernels there
    assert isinstance(elf.read_file(str(objects["section table cut"])), elf.ElfDefect)
    # the hint is not part of an ElfInfo's equality: readers that build one from bytes still compare equal
    info = elf.read_file(str(objects["fat"]), nv_fatbin=True)
    assert isinstance(info, elf.ElfInfo) and info == elf.ElfInfo(info.machine, info.soname, info.needed)
    assert elf.read_file(str(objects["fat"])).nv_fatbin is None  # not asked for: not worked out


def _report(prefix: Path, gpu: object) -> tuple[list[tuple], dict]:
    report = audit_run.audit(str(prefix), gpu=gpu)
    findings = [(f.id, f.status, f.summary, f.subject, f.evidence, f.fix) for f in report.findings]
    context = {k: v for k, v in report.context.items() if k not in ("seconds", "cache")}
    return findings, context


@pytest.mark.parametrize("gpu", ["default", (9, 0), None])
def test_an_audit_with_the_hint_says_what_one_without_it_says(env, objects, tmp_path, monkeypatch, gpu):
    for i, path in enumerate(objects.values()):
        env.add(f"ext-{i}", "1.0", files={f"ext_{i}/_C.abi3.so": path})
    env.add("ext-many", "1.0", files={"ext_many/a.so": objects["fat"], "ext_many/b.so": objects["stub"]})
    opened: list[str] = []
    scan, hint, off = fatbin.scan, elf._has_nv_fatbin, [False]

    def counted(path: str, *args, **kwargs):  # type: ignore[no-untyped-def]
        opened.append(path)
        return scan(path, *args, **kwargs)

    monkeypatch.setattr(fatbin, "scan", counted)
    # the opens are counted in this process: no worker processes (core/pool.py) read for it
    monkeypatch.setenv("SPARKENV_AUDIT_WORKERS", "0")
    # off: the hint is unknown for every object, so every object goes through the fatbin reader
    monkeypatch.setattr(elf, "_has_nv_fatbin", lambda read: None if off[0] else hint(read))

    def audit(cache: str, hint_off: bool) -> tuple[tuple[list[tuple], dict], int]:
        opened.clear()
        off[0] = hint_off
        monkeypatch.setenv("SPARKENV_CACHE_DIR", str(tmp_path / cache))
        return _report(env.prefix, gpu), len(opened)

    (with_hint, scanned_with), (without, scanned_without) = audit("a", False), audit("b", True)
    assert with_hint == without
    if gpu is not None:
        assert any(f[0].value == "G7" for f in without[0])
        assert 0 < scanned_with < scanned_without  # objects without .nv_fatbin were not opened again
    else:
        assert scanned_with == scanned_without == 0
    # a changed environment audited again: the ELF answers, hint included, come from the memo
    env.add("late", "1.0")
    (from_memo, _), (without, _) = audit("a", False), audit("c", True)
    assert from_memo == without


def _patched(base: Path, root: Path, name: str, patch) -> Path:  # type: ignore[no-untyped-def]
    """A copy of `base` with its section table patched: patch(data, rows, names_at, names_size, shoff)."""
    data = bytearray(base.read_bytes())
    (shoff,) = struct.unpack_from("<Q", data, 0x28)
    shentsize, shnum, shstrndx = struct.unpack_from("<HHH", data, 0x3A)
    rows = [shoff + i * shentsize for i in range(shnum)]
    names_at, names_size = struct.unpack_from("<QQ", data, rows[shstrndx] + 0x18)
    patch(data, rows, names_at, names_size)
    out = root / name
    out.write_bytes(bytes(data))
    return out


def _nv_fatbin_row(data: bytearray, rows: list[int], names_at: int) -> int:
    for row in rows:
        (index,) = struct.unpack_from("<I", data, row)
        if data[names_at + index : names_at + index + 11] == b".nv_fatbin\0":
            return row
    raise AssertionError("no .nv_fatbin")


def test_the_quick_section_check_agrees_with_naming_every_section(kernels, tmp_path):
    """list_sections(nv_fatbin_only=True) checks the names table's bytes when it is sound, and names
    every section when not: both give what the full listing gives, on sound and damaged tables."""
    fat = kernels.so("fat")

    def last_byte_not_nul(data, rows, at, size):  # type: ignore[no-untyped-def]
        data[at + size - 1] = ord("x")

    def name_past_table(data, rows, at, size):  # type: ignore[no-untyped-def]
        struct.pack_into("<I", data, rows[1], size + 5)

    def renamed(data, rows, at, size):  # type: ignore[no-untyped-def]
        start = data.index(b".nv_fatbin\0", at)
        data[start : start + 10] = b".nv_fatbix"

    def nobits(data, rows, at, size):  # type: ignore[no-untyped-def]
        struct.pack_into("<I", data, _nv_fatbin_row(data, rows, at) + 4, elf.SHT_NOBITS)

    variants = {"sound": fat, "plain": kernels.plain()}
    for patch in (last_byte_not_nul, name_past_table, renamed, nobits):
        variants[patch.__name__] = _patched(fat, tmp_path, f"{patch.__name__}.so", patch)
    answers = {}
    for name, path in variants.items():
        data = path.read_bytes()

        def read(offset: int, size: int, data: bytes = data) -> bytes:
            return data[offset : offset + size]

        full = elf.list_sections(read)
        quick = elf.list_sections(read, nv_fatbin_only=True)
        assert quick == (full if isinstance(full, str) else elf.nv_fatbin_sections(full)), name
        info = elf.read_file(str(path), nv_fatbin=True)
        if isinstance(info, elf.ElfInfo):
            assert info.nv_fatbin == fatbin.scan(str(path)).has_nv_fatbin, name
        answers[name] = quick if isinstance(quick, str) else len(quick)
    assert answers["sound"] == 1 and answers["plain"] == answers["renamed"] == answers["nobits"] == 0
    assert isinstance(answers["name_past_table"], str)  # damaged: the fatbin reader says so, as before

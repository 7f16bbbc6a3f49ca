"""The ELF reader (cuda/elf.py) field by field on real objects of every layout it reads — 64-bit little
endian (gcc), 64-bit big endian and 32-bit (gcc compiles, ld links: no 32-bit or big-endian C library is
needed for a shared object), an object nvcc built — and the exact reason it gives for each kind of
damage, made by changing one field of a real object. The reasons are what `audit` prints for a file it
could not read; a reader that quietly returned "nothing linked" instead would hide the file."""

from __future__ import annotations

import shutil
import struct
import subprocess
from pathlib import Path

import pytest

from sparkenv.cuda import elf


def _run(args: list[str], cwd: Path) -> None:
    subprocess.run(args, cwd=cwd, check=True, timeout=120, capture_output=True)


def _needs(tool: str) -> str:
    found = shutil.which(tool)
    if found is None:
        pytest.fail(f"{tool} is needed to build the ELF objects this test reads; CI and this machine ship it")
    return found


def _object(tmp: Path, cc: list[str], name: str) -> Path:
    (tmp / "f.c").write_text("int sparkenv_f(void) { return 1; }\n")
    _run([*cc, "-fPIC", "-c", "-o", name, "f.c"], tmp)
    return tmp / name


def _ld_shared(tmp: Path, ld: list[str], obj: Path, needed: tuple[str, ...], soname: str, rpath: str) -> Path:
    """A shared object linked by ld alone from `obj`, needing a stub per `needed` soname."""
    stubs = []
    for n in needed:
        _run([*ld, "-shared", "-soname", n, "-o", n, str(obj)], tmp)
        stubs.append(str(tmp / n))
    out = tmp / f"lib-{soname}"
    _run([*ld, "-shared", "-soname", soname, "--enable-new-dtags", "-rpath", rpath, "-o", out.name,
          str(obj), "--no-as-needed", *stubs], tmp)  # fmt: skip
    return out


@pytest.fixture(scope="module")
def built(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    """One object per layout, each needing libcudart.so.13 then libcublas.so.13."""
    root = tmp_path_factory.mktemp("elf-layouts")
    out: dict[str, Path] = {}
    needed = ("libcudart.so.13", "libcublas.so.13")
    le = root / "le64"
    le.mkdir()
    (le / "m.c").write_text("int sparkenv_m(void) { return 2; }\n")
    for n in needed:
        (le / "s.c").write_text("int sparkenv_s(void) { return 1; }\n")
        _run([_needs("gcc"), "-shared", "-fPIC", f"-Wl,-soname,{n}", "-o", n, "s.c"], le)
    _run([_needs("gcc"), "-shared", "-fPIC", "-Wl,-soname,libconsumer.so.1", "-Wl,--disable-new-dtags",
          "-Wl,-rpath,$ORIGIN/../nvidia/cuda_runtime/lib:/opt/cuda/lib64", "-o", "rpath.so", "m.c",
          "-Wl,--no-as-needed", *needed], le)  # fmt: skip
    _run([_needs("gcc"), "-shared", "-fPIC", "-Wl,--enable-new-dtags", "-Wl,-rpath,$ORIGIN",
          "-o", "runpath.so", "m.c", "-Wl,--no-as-needed", *needed], le)  # fmt: skip
    out["rpath"], out["runpath"] = le / "rpath.so", le / "runpath.so"
    _run([_needs("gcc"), "-c", "-o", "m.o", "m.c"], le)
    out["relocatable"] = le / "m.o"
    for name, cc, ld in (
        ("be64", [_needs("aarch64-linux-gnu-gcc"), "-mbig-endian"], [_needs("aarch64-linux-gnu-ld"), "-EB"]),
        ("le32", [_needs("gcc"), "-m32"], [_needs("ld"), "-m", "elf_i386"]),
    ):
        d = root / name
        d.mkdir()
        obj = _object(d, cc, "f.o")
        out[name] = _ld_shared(d, ld, obj, needed, f"lib{name}.so.1", "$ORIGIN/lib")
    return out


NEEDED = ("libcudart.so.13", "libcublas.so.13")
GCC_NEEDED = (*NEEDED, "libc.so.6")  # gcc links the C library after what the command line names


def test_rpath_as_written_and_needed_in_order(built):
    info = elf.read_file(str(built["rpath"]))
    assert info == elf.ElfInfo(
        "x86_64",
        "libconsumer.so.1",
        GCC_NEEDED,
        rpath=("$ORIGIN/../nvidia/cuda_runtime/lib", "/opt/cuda/lib64"),
    )
    assert info.runpath == ()


def test_runpath_kept_apart_from_rpath(built):
    info = elf.read_file(str(built["runpath"]))
    assert info == elf.ElfInfo("x86_64", None, GCC_NEEDED, runpath=("$ORIGIN",))


def test_a_big_endian_64_bit_object(built):
    data = built["be64"].read_bytes()
    assert data[4:6] == b"\x02\x02"  # ELFCLASS64, ELFDATA2MSB: what the reader is given
    assert elf.parse_bytes(data) == elf.ElfInfo("aarch64", "libbe64.so.1", NEEDED, runpath=("$ORIGIN/lib",))


def test_a_32_bit_object(built):
    data = built["le32"].read_bytes()
    assert data[4:6] == b"\x01\x01"  # ELFCLASS32, ELFDATA2LSB
    assert elf.parse_bytes(data) == elf.ElfInfo("i386", "lible32.so.1", NEEDED, runpath=("$ORIGIN/lib",))


@pytest.mark.parametrize("layout", ["rpath", "be64", "le32"])
def test_program_headers_alone_give_the_same_needed(built, layout):
    """Without section headers (`strip --strip-section-headers`) the dynamic segment is found through
    the program headers and its string table through the loaded segment that holds it."""
    data = bytearray(built[layout].read_bytes())
    end, is64 = ("<" if data[5] == 1 else ">"), data[4] == 2
    shoff_at, shnum_at = (40, 60) if is64 else (32, 48)
    struct.pack_into(end + ("Q" if is64 else "I"), data, shoff_at, 0)
    struct.pack_into(end + "H", data, shnum_at, 0)
    info = elf.parse_bytes(bytes(data))
    assert isinstance(info, elf.ElfInfo), info
    assert info.needed[:2] == NEEDED
    assert info == elf.parse_bytes(built[layout].read_bytes())


def test_a_relocatable_object_links_nothing(built):
    assert elf.read_file(str(built["relocatable"])) == elf.ElfInfo("x86_64", None, ())


def test_an_unknown_machine_is_named_by_its_number(built):
    data = bytearray(built["runpath"].read_bytes())
    struct.pack_into("<H", data, 18, 999)
    assert elf.parse_bytes(bytes(data)).machine == "EM_999"


def _with(path: Path, fmt: str, at: int, value: int) -> bytes:
    data = bytearray(path.read_bytes())
    struct.pack_into(fmt, data, at, value)
    return bytes(data)


def _shdrs(data: bytes) -> list[tuple[int, ...]]:
    (shoff,) = struct.unpack_from("<Q", data, 40)
    shentsize, shnum = struct.unpack_from("<HH", data, 58)
    return [struct.unpack_from("<IIQQQQIIQQ", data, shoff + i * shentsize) for i in range(shnum)]


def _dynamic_row(data: bytes) -> int:
    return next(i for i, row in enumerate(_shdrs(data)) if row[1] == 6)


def test_each_damage_has_its_reason(built):
    so = built["runpath"]
    data = so.read_bytes()
    (shoff,) = struct.unpack_from("<Q", data, 40)
    dyn = _dynamic_row(data)
    dyn_at = shoff + dyn * 64
    dyn_off, dyn_size = _shdrs(data)[dyn][4:6]
    cases = {
        "unknown ELF data encoding 3": _with(so, "<B", 5, 3),
        "unknown ELF class 7": _with(so, "<B", 4, 7),
        "truncated: ELF identification incomplete": data[:5],
        "truncated: ELF header incomplete": data[:40],
        "dynamic section links to a missing string table": _with(so, "<I", dyn_at + 40, 999),
        "section header table out of range": _with_many(so, 0xFFFF, 0xFFFF),
        "truncated: section header table ends past the end of the file": data[: shoff + 64],
        "truncated: dynamic section ends past the end of the file": _with(so, "<Q", dyn_at + 24, len(data)),
        "dynamic entry points past its string table": _first_needed_index(data, dyn_off, dyn_size, 1 << 20),
    }
    for reason, damaged in cases.items():
        assert elf.parse_bytes(damaged) == elf.ElfDefect(reason), reason


def _with_many(path: Path, shentsize: int, shnum: int) -> bytes:
    data = bytearray(path.read_bytes())
    struct.pack_into("<HH", data, 58, shentsize, shnum)
    return bytes(data)


def _first_needed_index(data: bytes, dyn_off: int, dyn_size: int, index: int) -> bytes:
    out = bytearray(data)
    for at in range(dyn_off, dyn_off + dyn_size, 16):
        tag, _ = struct.unpack_from("<qQ", out, at)
        if tag == 1:
            struct.pack_into("<Q", out, at + 8, index)
            return bytes(out)
    raise AssertionError("no DT_NEEDED")


def test_an_unterminated_name_is_a_defect(built):
    """The first needed name made the last bytes of its string table, the table's final NUL overwritten."""
    data = built["runpath"].read_bytes()
    rows = _shdrs(data)
    dyn = rows[_dynamic_row(data)]
    str_off, str_size = rows[dyn[6]][4:6]
    damaged = bytearray(_first_needed_index(data, dyn[4], dyn[5], str_size - 1))
    damaged[str_off + str_size - 1] = ord("x")
    assert elf.parse_bytes(bytes(damaged)) == elf.ElfDefect(
        "truncated: unterminated name in the string table"
    )


def test_a_dynamic_segment_without_a_string_table_and_one_outside_every_load(built):
    data = bytearray(built["rpath"].read_bytes())
    struct.pack_into("<Q", data, 40, 0)
    struct.pack_into("<H", data, 60, 0)
    (phoff,) = struct.unpack_from("<Q", data, 32)
    phentsize, phnum = struct.unpack_from("<HH", data, 54)
    rows = [struct.unpack_from("<IIQQQQQQ", data, phoff + i * phentsize) for i in range(phnum)]
    dyn_off, dyn_size = next((r[2], r[5]) for r in rows if r[0] == 2)
    strtab = next(
        at for at in range(dyn_off, dyn_off + dyn_size, 16) if struct.unpack_from("<q", data, at)[0] == 5
    )
    outside = bytearray(data)
    struct.pack_into("<Q", outside, strtab + 8, 1 << 40)
    assert elf.parse_bytes(bytes(outside)) == elf.ElfDefect(
        "string table address is outside every loaded segment"
    )
    no_table = bytearray(data)
    struct.pack_into("<q", no_table, strtab, 0x7FFFFFF0)  # an unknown tag: the reader skips it
    assert elf.parse_bytes(bytes(no_table)) == elf.ElfDefect("dynamic segment has no string table")


def test_a_file_not_regular_and_a_file_not_elf(tmp_path: Path):
    (tmp_path / "ld-script.so").write_text("/* GNU ld script */ INPUT(libfoo.so.1)\n")
    assert elf.read_file(str(tmp_path / "ld-script.so")) is None
    assert elf.read_file(str(tmp_path)) == elf.ElfDefect("not a regular file")
    assert elf.list_sections(elf_reader(tmp_path / "ld-script.so")) == "not an ELF file"


def elf_reader(path: Path) -> elf.Reader:
    data = path.read_bytes()
    return lambda offset, size: data[offset : offset + size]


def test_the_fatbin_hint_on_objects_with_and_without_gpu_code(built, kernels):
    plain = str(built["runpath"])
    assert elf.read_file(plain).nv_fatbin is None  # not asked: not known
    assert elf.read_file(plain, nv_fatbin=True).nv_fatbin is False
    gpu = str(kernels.so("sm121a"))
    assert elf.read_file(gpu, nv_fatbin=True).nv_fatbin is True
    sections = elf.list_sections(elf_reader(Path(gpu)))
    fatbins = elf.nv_fatbin_sections(sections)
    assert [s.name for s in fatbins] == [".nv_fatbin"] and fatbins[0].type == elf.SHT_PROGBITS
    assert elf.list_sections(elf_reader(Path(gpu)), nv_fatbin_only=True) == fatbins
    assert elf.list_sections(elf_reader(Path(plain)), nv_fatbin_only=True) == []
    names = [s.name for s in elf.list_sections(elf_reader(Path(plain)))]
    assert names[0] == "" and {".dynamic", ".dynstr", ".text", ".shstrtab"} <= set(names)


def test_the_table_cap_at_its_edge(built):
    """A section header table of exactly 4 MiB is read (and found past the end of this small file); one
    entry more is out of range before any read: the cap bounds the work hostile input can ask for."""
    so = built["runpath"]
    assert elf.parse_bytes(_with_many(so, 128, (4 << 20) // 128)) == elf.ElfDefect(
        "truncated: section header table ends past the end of the file"
    )
    assert elf.parse_bytes(_with_many(so, 128, (4 << 20) // 128 + 1)) == elf.ElfDefect(
        "section header table out of range"
    )


def test_the_name_cap_at_its_edge(tmp_path: Path):
    """A soname of 4095 bytes (its NUL the 4096th) is read; one of 4096 is a defect, not a longer read."""
    (tmp_path / "m.c").write_text("int sparkenv_m(void) { return 2; }\n")
    got = {}
    for size in (4095, 4096):
        soname = "lib" + "x" * (size - 3)
        _run(
            [_needs("gcc"), "-shared", "-fPIC", f"-Wl,-soname,{soname}", "-o", f"{size}.so", "m.c"], tmp_path
        )
        got[size] = (soname, elf.read_file(str(tmp_path / f"{size}.so")))
    soname, info = got[4095]
    assert isinstance(info, elf.ElfInfo) and info.soname == soname
    assert got[4096][1] == elf.ElfDefect("truncated: unterminated name in the string table")


def test_a_section_name_table_index_past_the_table_lists_nothing(built):
    """e_shstrndx past the section count: no section names can be read, so none are listed."""
    data = _with(built["runpath"], "<H", 62, 0xFFFE)
    assert elf.list_sections(lambda offset, size: data[offset : offset + size]) == []


@pytest.fixture(scope="module")
def cubin(tmp_path_factory: pytest.TempPathFactory) -> bytes:
    """A real cubin (the ELF inside a fatbin entry): nvcc -cubin of two kernels and a device function."""
    root = tmp_path_factory.mktemp("cubin")
    (root / "k.cu").write_text(
        "__device__ float twice(float v) { return 2.f * v; }\n"
        "__global__ void k(float* x) { x[threadIdx.x] = twice(x[threadIdx.x]); }\n"
        'extern "C" __global__ void plain_c(int* y) { y[0] = 1; }\n'
    )
    _run([_needs("nvcc"), "-cubin", "-arch=sm_121a", "-o", "k.cubin", "k.cu"], root)
    return (root / "k.cubin").read_bytes()


def test_the_kernels_a_cubin_defines(cubin):
    """Only __global__ functions (CUDA entry points), by their mangled names; not the device function."""
    read = lambda offset, size: cubin[offset : offset + size]  # noqa: E731
    assert sorted(elf.kernel_symbols(read)) == ["_Z1kPf", "plain_c"]


def test_a_cubin_whose_symbol_table_is_damaged(cubin):
    rows = _shdrs(cubin)
    symtab = next(i for i, row in enumerate(rows) if row[1] == elf.SHT_SYMTAB)
    (shoff,) = struct.unpack_from("<Q", cubin, 40)
    bad_link = bytearray(cubin)
    struct.pack_into("<I", bad_link, shoff + symtab * 64 + 40, 999)
    read = lambda offset, size: bad_link[offset : offset + size]  # noqa: E731
    assert elf.kernel_symbols(read) == "symbol table links to a missing string table"
    cut = bytearray(cubin)
    struct.pack_into("<Q", cut, shoff + symtab * 64 + 32, len(cubin))  # sh_size past the end of the file
    read = lambda offset, size: cut[offset : offset + size]  # noqa: E731
    assert elf.kernel_symbols(read) == "truncated: symbol table ends past the end of the file"
    assert elf.kernel_symbols(lambda offset, size: b"\0" * size) == "not an ELF file"


def test_a_dynamic_segment_at_an_offset_past_any_file(built):
    """p_offset read unsigned: 2**64 - 16 is far past the end of the file, not a negative offset."""
    data = bytearray(built["rpath"].read_bytes())
    struct.pack_into("<Q", data, 40, 0)
    struct.pack_into("<H", data, 60, 0)
    (phoff,) = struct.unpack_from("<Q", data, 32)
    phentsize, phnum = struct.unpack_from("<HH", data, 54)
    dyn = next(i for i in range(phnum) if struct.unpack_from("<I", data, phoff + i * phentsize)[0] == 2)
    struct.pack_into("<Q", data, phoff + dyn * phentsize + 8, (1 << 64) - 16)
    assert elf.parse_bytes(bytes(data)) == elf.ElfDefect(
        "truncated: dynamic segment ends past the end of the file"
    )


def test_a_section_name_of_4096_bytes_damages_the_table(tmp_path: Path, built):
    """Section names are read up to 4096 bytes, as other names: a longer one is the table's damage, in the
    quick .nv_fatbin listing as in the full one."""
    (tmp_path / "blob").write_bytes(b"x")
    out = tmp_path / "long.so"
    _run([_needs("objcopy"), "--add-section", f".{'x' * 4095}={tmp_path / 'blob'}", str(built["runpath"]),
          str(out)], tmp_path)  # fmt: skip
    data = out.read_bytes()
    read = lambda offset, size: data[offset : offset + size]  # noqa: E731
    reason = "truncated: unterminated name in the string table"
    assert elf.list_sections(read) == reason
    assert elf.list_sections(read, nv_fatbin_only=True) == reason


def test_the_kernels_of_a_big_endian_object_without_any(built):
    """kernel_symbols reads big-endian tables too: an object with functions but no CUDA entry point."""
    data = built["be64"].read_bytes()
    assert elf.kernel_symbols(lambda offset, size: data[offset : offset + size]) == []

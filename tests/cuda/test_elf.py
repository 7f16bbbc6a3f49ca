"""The ELF reader against real gcc output, damaged copies of it, and arbitrary bytes."""

from __future__ import annotations

import os
import struct
from pathlib import Path

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from sparkenv.cuda import elf

FUZZ_EXAMPLES = int(os.environ.get("SPARKENV_FUZZ_EXAMPLES", "3000"))


def test_reads_needed_and_soname_of_a_real_shared_object(elves):
    so = elves.linked(("libcudart.so.12", "libcublas.so.12"), soname="libconsumer.so.1")
    info = elf.read_file(str(so))
    assert isinstance(info, elf.ElfInfo)
    assert info.machine == "x86_64"
    assert info.soname == "libconsumer.so.1"
    assert "libcudart.so.12" in info.needed and "libcublas.so.12" in info.needed


def test_reads_an_aarch64_object_built_by_the_cross_compiler(elves):
    info = elf.read_file(str(elves.linked(("libcudart.so.13",), arch="aarch64")))
    assert isinstance(info, elf.ElfInfo)
    assert info.machine == "aarch64"
    assert "libcudart.so.13" in info.needed


def test_falls_back_to_program_headers_when_section_headers_are_gone(elves):
    data = bytearray(elves.linked(("libcudart.so.13",)).read_bytes())
    # e_shoff (64-bit: offset 40) = 0 and e_shnum (offset 60) = 0, as after `strip --strip-section-headers`
    struct.pack_into("<Q", data, 40, 0)
    struct.pack_into("<H", data, 60, 0)
    info = elf.parse_bytes(bytes(data))
    assert isinstance(info, elf.ElfInfo)
    assert "libcudart.so.13" in info.needed


def test_not_elf_is_none_and_truncation_is_a_defect(elves, tmp_path: Path):
    assert elf.parse_bytes(b"/* GNU ld script */ INPUT(libfoo.so.1)") is None
    data = elves.linked(("libcudart.so.12",)).read_bytes()
    for cut in (8, 40, 63, len(data) // 2, len(data) - 200):
        result = elf.parse_bytes(data[:cut])
        assert isinstance(result, elf.ElfDefect), (cut, result)
        assert result.reason


def test_a_fifo_named_like_a_library_does_not_hang(tmp_path: Path):
    fifo = tmp_path / "libfifo.so"
    os.mkfifo(fifo)
    assert elf.read_file(str(fifo)) == elf.ElfDefect("not a regular file")


def test_reads_only_headers_of_a_huge_sparse_library(elves, tmp_path: Path):
    big = tmp_path / "libhuge.so"
    big.write_bytes(elves.linked(("libcudart.so.13",)).read_bytes())
    os.truncate(big, 4 << 30)  # 4 GiB apparent, a hole after the real bytes
    info = elf.read_file(str(big))
    assert isinstance(info, elf.ElfInfo) and "libcudart.so.13" in info.needed


@settings(max_examples=FUZZ_EXAMPLES, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.binary(max_size=4096))
def test_arbitrary_bytes_never_raise(data: bytes):
    assert isinstance(elf.parse_bytes(data), (elf.ElfInfo, elf.ElfDefect, type(None)))


@settings(max_examples=FUZZ_EXAMPLES, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.binary(min_size=58, max_size=4096))
def test_arbitrary_bytes_behind_an_elf_identification_never_raise(tail: bytes):
    for ident in (b"\x7fELF\x02\x01", b"\x7fELF\x01\x02"):
        assert isinstance(elf.parse_bytes(ident + tail), (elf.ElfInfo, elf.ElfDefect))


_REAL: dict[str, bytes] = {}


@settings(
    max_examples=FUZZ_EXAMPLES,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture],
)
@given(st.lists(st.tuples(st.integers(min_value=0, max_value=20000), st.integers(0, 255)), max_size=12))
def test_real_elf_with_corrupted_bytes_never_raises(elves, flips: list[tuple[int, int]]):
    if "x" not in _REAL:
        _REAL["x"] = elves.linked(("libcudart.so.12", "libnccl.so.2")).read_bytes()
    data = bytearray(_REAL["x"])
    for pos, value in flips:
        data[pos % len(data)] = value
    assert isinstance(elf.parse_bytes(bytes(data)), (elf.ElfInfo, elf.ElfDefect, type(None)))

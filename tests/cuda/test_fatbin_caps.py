"""The fatbin reader's caps on headers and entries (data/kernels.toml [limits]), cut at the cap and not
one before, with the reason that makes the scan a lower bound; and an unreadable file said to be
unreadable, never read as one without kernels. Fatbins are crafted byte by byte where a count must be
exact (a header flood, an entry flood), and built by nvcc 13 where a real one serves."""

from __future__ import annotations

import struct
from pathlib import Path

import pytest

from sparkenv.cuda import fatbin
from sparkenv.cuda.targets import KernelTarget
from sparkenv.knowledge.records.kernels import Limits

MAGIC = 0xBA55ED50
ENTRY = struct.Struct("<HHIQIIHHIIIQ")  # kind, ?, header size, payload size, …, arch, …, flags
ENTRY_HEADER = 64  # what nvcc writes; the reader needs at least ENTRY.size
NO_TIME_CAP = 600.0


def entry_flood(count: int, arch: int = 121, payload: bytes = b"\0" * 16) -> bytes:
    """One fatbin of `count` cubin entries (kind 2) for sm_`arch`, each with a small payload."""
    entry = ENTRY.pack(2, 0x101, ENTRY_HEADER, len(payload), 0, 0, 0, 0, arch, 0, 0, 0)
    entry += b"\0" * (ENTRY_HEADER - ENTRY.size) + payload
    body = entry * count
    return struct.pack("<IHHQ", MAGIC, 1, 16, len(body)) + body


@pytest.fixture(scope="module")
def crafted(kernels, tmp_path_factory):
    """name -> a real ELF (gcc + objcopy) whose .nv_fatbin holds a crafted fatbin."""
    root = tmp_path_factory.mktemp("crafted")

    def one(name: str, data: bytes) -> Path:
        blob = root / f"{name}.bin"
        blob.write_bytes(data)
        return kernels.with_section(kernels.plain(), ".nv_fatbin", blob, name)

    # 256 headers and 1,024 entries: the counts at which the reader checks its budget anyway
    return {
        **{f"{n} headers": one(f"headers{n}", kernels.header_flood(n).read_bytes()) for n in (40, 256)},
        **{f"{n} entries": one(f"entries{n}", entry_flood(n)) for n in (40, 1024)},
    }


@pytest.mark.parametrize("n", [40, 256])
@pytest.mark.parametrize("mapped", [False, True], ids=["pread", "mmap"])
def test_the_header_cap_cuts_after_that_many_headers_not_before(crafted, mapped, n):
    path = str(crafted[f"{n} headers"])
    at_cap = fatbin.scan(path, limits=Limits(n, 10_000, NO_TIME_CAP), mapped=mapped)
    assert (at_cap.complete, at_cap.problem, at_cap.headers) == (True, None, n)
    over = fatbin.scan(path, limits=Limits(n - 1, 10_000, NO_TIME_CAP), mapped=mapped)
    assert over.complete is False and over.headers == n
    assert over.problem == f".nv_fatbin: stopped after {n - 1} fatbin headers (too many headers)"


@pytest.mark.parametrize("n", [40, 1024])
@pytest.mark.parametrize("mapped", [False, True], ids=["pread", "mmap"])
def test_the_entry_cap_cuts_after_that_many_entries_not_before(crafted, mapped, n):
    path = str(crafted[f"{n} entries"])
    sm121 = KernelTarget("sm", 121, "")
    at_cap = fatbin.scan(path, limits=Limits(10, n, NO_TIME_CAP), mapped=mapped)
    assert (at_cap.complete, at_cap.problem, at_cap.entries) == (True, None, n)
    assert at_cap.targets == {sm121} and at_cap.payload == {sm121: n * 16}
    assert at_cap.sections == [".nv_fatbin"] and at_cap.has_nv_fatbin
    over = fatbin.scan(path, limits=Limits(10, n - 1, NO_TIME_CAP), mapped=mapped)
    assert over.complete is False and over.entries == n
    assert over.problem == f".nv_fatbin: stopped after {n - 1} kernel entries (too many entries)"
    assert over.targets == {sm121}  # what was read before the cap stays: a lower bound


@pytest.mark.parametrize("mapped", [False, True], ids=["pread", "mmap"])
def test_the_entry_cap_on_a_real_nvcc_fatbin(kernels, mapped):
    """nvcc 13's fat build (sm_80, sm_90, sm_120 and compute_120): the cap at its own entry count reads
    all of it, one under stops with the reason; what was read then is a part of the whole."""
    path = str(kernels.so("fat"))
    whole = fatbin.scan(path, limits=Limits(10_000, 10_000, NO_TIME_CAP), mapped=mapped)
    assert whole.complete and {t.name for t in whole.targets} == {"sm_80", "sm_90", "sm_120", "compute_120"}
    n = whole.entries
    assert fatbin.scan(path, limits=Limits(10_000, n, NO_TIME_CAP), mapped=mapped) == whole
    cut = fatbin.scan(path, limits=Limits(10_000, n - 1, NO_TIME_CAP), mapped=mapped)
    assert cut.problem == f".nv_fatbin: stopped after {n - 1} kernel entries (too many entries)"
    assert not cut.complete and cut.targets <= whole.targets  # the last entry's bytes not read:
    assert sum(cut.payload.values()) < sum(whole.payload.values())


def test_read_targets_says_a_flood_of_entries_is_malformed(kernels, tmp_path, monkeypatch):
    """The gate's reader on more entries than data/kernels.toml allows: a reason, not a partial list of
    targets. The shipped caps on headers and entries, with the time cap lifted (the reader takes it
    from the data file; on a loaded machine the shipped 2 s ran out before the entry cap)."""
    from sparkenv.knowledge import kernels as kernel_data

    shipped = kernel_data()
    lifted = shipped._replace(limits=shipped.limits._replace(max_seconds=NO_TIME_CAP))
    monkeypatch.setattr(fatbin, "kernels", lambda: lifted)
    most = shipped.limits.max_entries
    blob = tmp_path / "many.bin"
    blob.write_bytes(entry_flood(most + 1, payload=b""))
    path = kernels.with_section(kernels.plain(), ".nv_fatbin", blob, "entry-flood")
    assert fatbin.read_targets(str(path)) == "malformed fatbin (too many entries)"


def test_an_unreadable_file_is_said_not_read_as_one_without_kernels(tmp_path, elves):
    """A path that opens but cannot be read (a directory), and one that does not open: each scan says
    why and is incomplete, where an object without GPU code reads complete with no targets."""
    for path, why in ((tmp_path, "Is a directory"), (tmp_path / "gone.so", "No such file or directory")):
        for mapped in (False, True):
            found = fatbin.scan(str(path), mapped=mapped)
            assert (found.complete, found.problem) == (False, f"unreadable: {why}"), (path, mapped)
        assert fatbin.read_targets(str(path)) == f"unreadable: {why}"
    plain = fatbin.scan(str(elves.linked(("libcudart.so.13",))))
    assert (plain.complete, plain.problem, plain.targets) == (True, None, set())

"""G7 kernel coverage: real kernels nvcc 13 builds, read by sparkenv's fatbin reader, judged per GPU."""

from __future__ import annotations

import pytest

from sparkenv.core.report import Status
from sparkenv.cuda import coverage, fatbin
from sparkenv.knowledge import kernels as kernels_data
from sparkenv.knowledge.records.kernels import Limits
from sparkenv.rules import g7, g7_coverage

H200, GB10, B200 = (9, 0), (12, 1), (10, 0)


def verdict(path, cap, deep=True):
    scan = fatbin.scan(str(path), deep=deep)
    payload = {t.name: n for t, n in scan.payload.items()}
    return g7_coverage.judge(scan.targets, cap, scan.complete, payload)


@pytest.mark.parametrize(
    ("build", "cap", "status"),
    [
        ("sm90", H200, Status.PASS),
        ("sm90", GB10, Status.FAIL),  # Hopper-only extension on a Spark: no kernel image
        ("sm120", GB10, Status.PASS),  # sm_120 runs on SM121 (same major, lower minor)
        ("sm120", H200, Status.FAIL),
        ("sm120a", GB10, Status.FAIL),  # arch-specific: runs on exactly 12.0
        ("sm121a", GB10, Status.PASS),
        ("sm121a", (12, 0), Status.FAIL),
        ("fat", GB10, Status.PASS),
        ("fat", H200, Status.PASS),
        ("fat", B200, Status.FAIL),  # sm_80/sm_90 need their own major; compute_120 cannot JIT down to 10.0
        ("ptx90", GB10, Status.INFO),  # PTX only, tiny: JIT at first use in well under a second
        ("lto90", GB10, Status.WARN),  # LTO-IR only: needs nvJitLink at run time
    ],
)
def test_coverage_of_real_kernels(kernels, build, cap, status):
    got = verdict(kernels.so(build), cap)
    assert got.status is status, (build, cap, got)


def test_arch_specific_fail_says_why(kernels):
    got = verdict(kernels.so("sm120a"), GB10)
    assert "sm_120a is arch-specific" in got.reason
    assert got.targets == ("sm_120a",)


def test_large_ptx_only_is_a_warning_with_its_cost(kernels):
    """The same PTX-only verdict as a package of many kernels: a WARN that names the JIT cost."""
    got = g7_coverage.judge(["compute_90"], GB10, payload={"compute_90": 50 << 20})
    assert got.status is Status.WARN
    assert "JIT-compiles" in got.reason and "CUDA_CACHE_MAXSIZE" in got.reason
    assert g7_coverage.judge(["compute_90"], GB10).status is Status.WARN  # size unknown: assume the cost


def test_fatbin_in_ldata_is_read(kernels):
    """The cuFFT layout: one sm_75 cubin in .nv_fatbin, the real kernels in a data section, off the
    8-byte grid. .nv_fatbin alone gives a false FAIL on both GPUs; the deep read does not."""
    lib = kernels.with_section(kernels.so("sm75"), ".ldata", kernels.fatbin("fat"), "cufftlike", offset=4)
    for cap in (H200, GB10):
        assert verdict(lib, cap, deep=False).status is Status.FAIL
        assert verdict(lib, cap).status is Status.PASS
    scan = fatbin.scan(str(lib), deep=True)
    assert scan.sections == [".nv_fatbin", ".ldata"]
    assert {t.name for t in scan.targets} == {"sm_75", "sm_80", "sm_90", "sm_120", "compute_120"}


def test_big_library_with_almost_no_fatbin_is_not_judged_missing(kernels):
    """A 60 MB library with a 4 KB fatbin keeps its kernels elsewhere: INFO saying so, never FAIL."""
    lib = kernels.with_section(kernels.so("sm75"), ".lbss", kernels.zeros(60_000_000), "sparse")
    got = verdict(lib, GB10)
    assert got.status is Status.INFO
    scan = fatbin.scan(str(lib), deep=True)
    assert not scan.complete and "does not read" in scan.problem


def test_header_flood_is_capped_and_never_a_fail(kernels):
    """Issue 11: a file full of fatbin headers. The reader stops at the header cap and says so, whatever
    this machine's pace (the time cap, which a loaded machine can reach first, is lifted here); with
    every cap as shipped, the verdict is an INFO whichever cap stops it."""
    lib = kernels.with_section(kernels.so("sm75"), ".ldata", kernels.header_flood(250_000), "flood")
    caps = kernels_data().limits
    scan = fatbin.scan(str(lib), deep=True, limits=Limits(caps.max_headers, caps.max_entries, 600.0))
    assert not scan.complete
    assert scan.problem == f".ldata: stopped after {caps.max_headers} fatbin headers (too many headers)"
    assert scan.headers == caps.max_headers + 1
    assert verdict(lib, GB10).status is Status.INFO


def test_time_cap(kernels):
    lib = kernels.with_section(kernels.so("sm75"), ".ldata", kernels.header_flood(100_000), "flood-t")
    scan = fatbin.scan(str(lib), deep=True, limits=Limits(10**7, 10**8, 0.0))
    assert not scan.complete and "stopped after 0 s" in scan.problem


def test_torch_arch_lists_from_real_machines():
    """torch.cuda.get_arch_list() strings, as the gate passes them (shared/fixtures/gb10/torch-facts)."""
    ngc_25_10 = ["sm_80", "sm_86", "sm_90", "sm_100", "sm_110", "sm_120", "compute_120"]
    pypi_2_11 = ["sm_80", "sm_90", "sm_100", "sm_110", "sm_120"]
    hopper_only = ["sm_80", "sm_86", "sm_90"]
    assert g7_coverage.judge(ngc_25_10, GB10).status is Status.PASS
    assert g7_coverage.judge(pypi_2_11, GB10).status is Status.PASS
    assert g7_coverage.judge(hopper_only, GB10).status is Status.FAIL
    assert g7_coverage.judge([*hopper_only, "compute_90"], GB10).status is Status.WARN


@pytest.mark.parametrize(
    ("text", "cap"),
    [("12.1", GB10), ("(12, 1)", GB10), ("121", GB10), ("sm_121a", GB10), ("9.0", H200), ("90", H200)],
)
def test_capability_spellings(text, cap):
    assert coverage.parse_capability(text) == cap


@pytest.mark.parametrize("text", ["", "twelve", "1234", "12.10"])
def test_not_a_capability(text):
    assert coverage.parse_capability(text) is None


def test_package_finding_names_the_object_and_the_fix(kernels):
    objs = [
        coverage.ObjectKernels("pkg/_good.so", ("sm_120", "compute_120")),
        coverage.ObjectKernels("pkg/_hopper.so", ("sm_90",)),
    ]
    # the union of a package's objects decides (libcufftw's sm_75 helper beside libcufft's kernels)
    assert g7.package_finding("pkg", "1.0", objs, GB10, "GB10 (12.1)").status is Status.PASS
    f = g7.package_finding("pkg", "1.0", objs[1:], GB10, "GB10 (12.1)")
    assert f.status is Status.FAIL and f.subject == "pkg"
    assert "pkg 1.0 (pkg/_hopper.so) cannot run on GB10 (12.1)" in f.summary
    assert "no kernel image is available" in f.summary
    assert 'TORCH_CUDA_ARCH_LIST="12.1"' in f.fix
    assert g7.package_finding("pkg", "1.0", [objs[0]], GB10, "GB10").status is Status.PASS
    empty = [coverage.ObjectKernels("x.so", ())]
    assert g7.package_finding("pkg", "1.0", empty, GB10, "GB10") is None

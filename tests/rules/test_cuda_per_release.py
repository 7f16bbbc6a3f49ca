"""rules/cuda_per_release.py: a distribution with one library per CUDA release (bitsandbytes) carries one
for the target's CUDA major or not, and the fix names the first release that does (packages.toml's dated
[[cuda13_from]]). The file lists are bitsandbytes' wheels' (0.47.0 stops at _cuda129, 0.48.0 adds _cuda130:
the data's evidence)."""

from __future__ import annotations

from sparkenv.knowledge import packages
from sparkenv.rules import cuda_per_release

OLD = [f"bitsandbytes/libbitsandbytes_cuda{r}.so" for r in ("118", "120", "121", "124", "126", "128", "129")]
NEW = [*OLD, "bitsandbytes/libbitsandbytes_cuda130.so", "bitsandbytes/libbitsandbytes_cpu.so"]


def test_libraries_by_major_in_path_order():
    libs = cuda_per_release.libraries([*NEW, "bitsandbytes/__init__.py", "bitsandbytes/libfoo_cuda13x.so"])
    assert sorted(libs) == [11, 12, 13]
    assert libs[11] == ["libbitsandbytes_cuda118.so"]
    assert libs[12][0] == "libbitsandbytes_cuda120.so" and libs[12][-1] == "libbitsandbytes_cuda129.so"
    assert libs[13] == ["libbitsandbytes_cuda130.so"]
    assert cuda_per_release.libraries(["x/libbitsandbytes_cuda130.so.1"]) == {
        13: ["libbitsandbytes_cuda130.so.1"]
    }


def test_a_release_with_a_cuda_13_library_passes():
    assert cuda_per_release.verdict("bitsandbytes", NEW, "aarch64") == (
        True,
        "carries a CUDA 13 library (libbitsandbytes_cuda130.so)",
        "",
    )


def test_a_release_without_one_names_its_range_and_the_first_release_with_one():
    first = packages().first_cuda13("bitsandbytes", "aarch64")
    assert first is not None
    ok, what, fix = cuda_per_release.verdict("bitsandbytes", OLD, "aarch64")
    assert not ok
    assert what == (
        "has no CUDA 13 library among its per-CUDA-release libraries (libbitsandbytes_cuda118.so … "
        "libbitsandbytes_cuda129.so); it picks one by torch.version.cuda at run time"
    )
    assert fix == (
        f"upgrade to bitsandbytes >= {first.version}, whose aarch64 wheels ship a CUDA 13 library "
        f"({first.source})"
    )
    _, what, _ = cuda_per_release.verdict("bitsandbytes", OLD[-1:], "aarch64")
    assert "(libbitsandbytes_cuda129.so);" in what


def test_a_package_the_data_does_not_date_gets_the_general_fix():
    ok, _, fix = cuda_per_release.verdict("mylib", ["mylib/libmylib_cuda121.so"], "aarch64")
    assert not ok and fix == "use a mylib release whose aarch64 wheel ships a CUDA 13 library"
    assert cuda_per_release.verdict("mylib", ["mylib/_C.so", "mylib/libcudart.so.12"], "aarch64") is None

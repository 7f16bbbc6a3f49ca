"""The classes of tests/lock/test_lock_classes.py on real packages from the public index: the lock judges what
a wheel ships, what an sdist builds and a build uv cannot do, by class, not by name. `--exclude-newer`
holds the index at a date so the verdicts stay put.

- one native library per CUDA release, none for CUDA 13: bitsandbytes 0.47.0 (0.48.2 has one)
- an sdist whose setup.py imports torch and compiles a CUDAExtension: torch-scatter (uv cannot build it)
- an sdist-only pure-Python package: fvcore (a WARN, as before)
- a CUDA 12 package pulled in through an extra: ray[cgraph] → cupy-cuda12x
"""

from __future__ import annotations

import pytest
from pypi_lock import by as _by

pytestmark = pytest.mark.network


def test_wheel_with_one_library_per_cuda_release_and_none_for_13(lock, tmp_path):
    r = lock("bitsandbytes==0.47.0\n")
    g1 = _by(r)[("G1", "bitsandbytes")]
    assert r.code == 1 and g1["status"] == "FAIL", r.out + r.err
    assert "libbitsandbytes_cuda118.so … libbitsandbytes_cuda129.so" in g1["summary"]
    assert ">= 0.48.0" in g1["fix"]
    assert not (tmp_path / "out").exists()
    ok = lock("bitsandbytes==0.48.2\n")
    assert ok.code == 0 and _by(ok)[("G1", "bitsandbytes")]["status"] == "PASS"


def test_sdist_that_imports_torch_to_build_is_a_finding(lock, tmp_path):
    r = lock("torch-scatter\n")
    assert r.code == 1, r.out + r.err
    g2 = _by(r)[("G2", "torch-scatter")]
    assert g2["status"] == "FAIL" and "No module named 'torch'" in g2["summary"]
    assert "compiles CUDA/C++ against torch" in g2["summary"] and "torch.utils.cpp_extension" in g2["summary"]
    assert "Traceback" not in r.err


def test_pure_python_sdist_stays_a_warn(lock):
    r = lock("fvcore\n")
    g2 = _by(r)[("G2", "fvcore")]
    assert g2["status"] == "WARN" and "pure-Python" in g2["summary"]


def test_cuda12_package_through_an_extra_names_the_extra(lock):
    r = lock("ray[cgraph]\n")
    g1 = _by(r)[("G1", "cupy-cuda12x")]
    assert r.code == 1 and g1["status"] == "FAIL"
    assert "ray[cgraph] → cupy-cuda12x" in g1["summary"]

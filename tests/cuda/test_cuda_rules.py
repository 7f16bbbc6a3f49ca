"""The soname, name and label rules of sparkenv/data/cuda.toml, both sides of each."""

from __future__ import annotations

import pytest

from sparkenv.cuda import rules


@pytest.mark.parametrize(
    ("soname", "major"),
    [
        ("libcudart.so.12", 12),
        ("libcudart.so.13", 13),
        ("libcublas.so.12", 12),
        ("libcublasLt.so.13", 13),
        ("libnvrtc.so.12", 12),
        ("libnvJitLink.so.13", 13),
        ("libcupti.so.12", 12),
        ("libnppc.so.13", 13),
        ("libnvjpeg.so.12", 12),
        # cuFFT and cuSOLVER are one behind: .so.12 is CUDA 13
        ("libcufft.so.11", 12),
        ("libcufft.so.12", 13),
        ("libcusolver.so.11", 12),
        ("libcusolver.so.12", 13),
        # auditwheel-vendored copies keep their meaning
        ("libcudart.faf08d9a.so.13", 13),
        ("libcudart-3f1a2b4c.so.12.8.90", 12),
    ],
)
def test_major_bearing_sonames(soname: str, major: int):
    assert rules.soname_major(soname) == major


@pytest.mark.parametrize(
    "soname",
    [
        "libcusparse.so.12",
        "libcurand.so.10",
        "libcudnn.so.9",
        "libnccl.so.2",
        "libcufile.so.0",
        "libcuda.so.1",
        "libc.so.6",
        "libcudart_static.a",
        "libcudartx.so.12",
    ],
)
def test_ambiguous_or_foreign_sonames_prove_nothing(soname: str):
    assert rules.soname_major(soname) is None


@pytest.mark.parametrize(
    ("key", "major", "library"),
    [
        ("nvidia-cuda-runtime-cu12", 12, True),
        ("nvidia-nccl-cu13", 13, True),
        ("cupy-cuda12x", 12, False),
        ("jax-cuda12-plugin", 12, False),
        ("transformer-engine-cu12", 12, False),
        ("tensorrt-cu12-libs", 12, True),
    ],
)
def test_names_that_carry_the_major(key: str, major: int, library: bool):
    m = rules.name_match(key)
    assert m is not None and (m.major, m.library) == (major, library)


@pytest.mark.parametrize("key", ["nvidia-cufft", "nvidia-cuda-runtime", "torch", "cupy", "accuracy"])
def test_names_that_do_not(key: str):
    assert rules.name_match(key) is None


def test_version_labels():
    assert rules.label_cuda_major("2.9.1+cu128") == 12
    assert rules.label_cuda_major("2.9.0+cu130") == 13
    assert rules.label_cuda_major("2.8.3+cu12torch2.9cxx11abiTRUE") == 12
    assert rules.label_cuda_major("2.11.0") is None
    assert rules.is_cpu_label("2.9.1+cpu") and not rules.is_cpu_label("2.9.1+cu130")
    assert rules.ngc_release("2.10.0a0+a36e1d39eb.nv26.01.42222806") == "26.01"
    assert rules.ngc_release("2.9.0a0+145a3a7bda.nv25.10") == "25.10"
    assert rules.ngc_release("2.9.0+cu130") is None


def test_exact_pins_on_versioned_toolkit_wheels():
    assert rules.pinned_major("cuda-toolkit", "==13.0.2") == 13
    assert rules.pinned_major("nvidia-cuda-runtime", "==12.6.77") == 12
    assert rules.pinned_major("cuda-toolkit", ">=12") is None  # a range proves nothing
    assert rules.pinned_major("nvidia-cufft", "==12.0.0.61") is None  # cuFFT 12.x is CUDA 13's

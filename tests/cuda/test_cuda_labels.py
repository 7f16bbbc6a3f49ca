"""cuda/rules.py at the edges test_cuda_rules.py leaves: auditwheel's vendored copies of a soname, the
index channel a URL serves, CUDA's digits as labels and library names write them, NGC release labels
as torch prints them and as PEP 440 stores them, the earliest NGC release on a major, the install
folders only one major's wheels use, and the project name at the start of a Requires-Dist line. The
data is sparkenv/data/cuda.toml; real spellings from the wheels named."""

from __future__ import annotations

import pytest

from sparkenv.cuda import rules


@pytest.mark.parametrize(
    ("soname", "plain"),
    [
        ("libcudart.faf08d9a.so.13", "libcudart.so.13"),  # auditwheel's vendored copy
        ("libcudart-faf08d9a.so.12", "libcudart.so.12"),
        ("libgomp-a34b3233.so.1.0.0", "libgomp.so.1.0.0"),
        ("libcudart.so.13", "libcudart.so.13"),
        ("libcudart.FAF08D9A.so.13", "libcudart.FAF08D9A.so.13"),  # not auditwheel's hash
    ],
)
def test_vendored_sonames(soname, plain):
    assert rules.unvendored(soname) == plain


def test_a_vendored_copy_proves_its_major():
    assert rules.soname_major("libcudart.faf08d9a.so.13") == 13
    assert rules.soname_major("libnppial.so.12.3.1") == 12  # libnpp*: any letters after the prefix
    assert rules.soname_major("libcudart.so.14") is None  # a major the data does not map


@pytest.mark.parametrize(
    ("digits", "major"), [("128", 12), ("130", 13), ("12", 12), ("13", 13), ("118", 11), ("90", 9)]
)
def test_cuda_digits(digits, major):
    assert rules.cuda_digits_major(digits) == major


def test_labels_with_more_than_the_cuda_part():
    assert rules.label_cuda_major("0.0.33+cu130.post1") == 13
    assert rules.label_cuda_major("1.0+foo.cu128") == 12
    assert rules.label_cuda_major("2.9.1+cu1280") is None  # four digits: not a CUDA label
    assert rules.is_cpu_label("2.9.1+cpu.cxx11.abi") and rules.is_cpu_label("2.9.1+abc.cpu")
    assert not rules.is_cpu_label("2.9.1+cpuinfo") and not rules.is_cpu_label("2.9.1")


@pytest.mark.parametrize(
    ("url", "label"),
    [
        ("https://download.example/whl/cu128", "+cu128"),
        ("https://download.example/whl/cu130/", "+cu130"),
        ("https://download.example/whl/cpu", "+cpu"),
        ("https://download.example/whl/nightly/cu130/torch/", "+cu130"),
        ("https://download.example/whl/cu1280", None),
        ("https://download.example/simple/", None),
    ],
)
def test_index_channels(url, label):
    assert rules.index_label(url) == label


def test_ngc_labels_as_printed_and_as_stored():
    assert rules.ngc_release("2.14.0a0+4fdf77b940.nv26.8.63802676") == "26.08"  # PEP 440 drops the 0
    assert rules.ngc_release("2.14.0a0+4fdf77b940.nv26.08") == "26.08"
    assert rules.ngc_release("2.9.0a0+145a3a7bda.nv25.123") is None  # three digits: not a month
    assert rules.ngc_release("2.9.0.nv25.10") is None  # not in the local label
    assert rules.ngc_cuda_major("25.10") == 13 and rules.ngc_cuda_major("19.01") is None


def test_the_earliest_ngc_release_on_a_major():
    assert rules.first_ngc_release(13) == "25.09"
    assert rules.first_ngc_release(11) is None


def test_folders_only_one_major_installs_into():
    assert rules.layout_paths() == [("nvidia/cu13/", 13), ("nvidia/cu12/", 12)]


@pytest.mark.parametrize(
    ("line", "name"),
    [
        ("nvidia-cublas-cu12==12.8.4.1; platform_system == 'Linux'", "nvidia-cublas-cu12"),
        ("  torch.compile_helper>=1", "torch.compile_helper"),
        ("cuda-toolkit[cublas]==13.0.2", "cuda-toolkit"),
        ("; extra == 'x'", None),
        ("-e .", None),
    ],
)
def test_the_name_of_a_requirement(line, name):
    assert rules.requirement_name(line) == name


def test_extras_and_versioned_names():
    assert rules.extra_major("CUDA12 ") == 12
    assert rules.extra_major("core_cu13") == 13
    assert rules.extra_major("cuda") is None
    assert rules.is_cuda_relevant("cuda-toolkit") and rules.is_cuda_relevant("nvidia-cublas-cu12")
    assert not rules.is_cuda_relevant("numpy")
    assert rules.pinned_major("numpy", "==13.0") is None  # only versioned CUDA wheels
    assert rules.pinned_major("cuda-toolkit", "==v13") is None

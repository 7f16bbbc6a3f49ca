"""cuda/demangle.py: kernel names as torch's profiler records them, checked against binutils' c++filt (an
independent demangler); names it must leave alone come back unchanged: not mangled, not a valid mangled
name, longer than its cap."""

from __future__ import annotations

import shutil
import subprocess

import pytest

from sparkenv.cuda import demangle

NAMES = [
    "_Z1kPf",  # the kernel of tests/kernel_helpers.py: k(float*)
    "_ZN2at6native29vectorized_elementwise_kernelILi4ENS0_11FillFunctorIfEESt5arrayIPcLm1EEEEviT0_T1_",
    "_ZN7cutlass13device_kernelIN5flash6KernelEEEvNT_6ParamsE",
]


def cxxfilt(name: str) -> str:
    tool = shutil.which("c++filt")
    if tool is None:
        pytest.fail("binutils' c++filt is needed as the independent demangler; CI and this machine ship it")
    return subprocess.run([tool, name], capture_output=True, text=True, timeout=30, check=True).stdout.strip()


def test_the_runtime_is_there():
    assert demangle.available()


@pytest.mark.parametrize("name", NAMES)
def test_mangled_names_read_as_cxxfilt_reads_them(name):
    got = demangle.demangle(name)
    assert got == cxxfilt(name) and got != name


def test_names_left_alone():
    assert demangle.demangle("run") == "run"  # extern "C": the same both ways
    # extern "C" names the demangler would read as a type: f is "float", Ss "std::string"
    assert (demangle.demangle("f"), demangle.demangle("Ss")) == ("f", "Ss")
    assert demangle.demangle("_Zx_not_a_name") == "_Zx_not_a_name"  # the demangler refuses it
    assert demangle.demangle("_Z1k\u00e9") == "_Z1k\u00e9"  # not ASCII: no mangled name, no error either
    past = "_Z65529" + "a" * 65529 + "v"  # over MAX_NAME: kept as it is, not handed to the demangler
    assert demangle.demangle(past) == past

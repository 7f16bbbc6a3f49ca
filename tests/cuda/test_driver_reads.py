"""cuda/driver.py's readings and look-ups under G1's driver verdict: the kernel module's flavour from its
version line or its taint flags, a CUDA release from the spellings images and torch use, and the row of
NVIDIA's table (data/drivers.toml) a release is judged by — exact, the GA of a minor whose update is not
known, an update the table lacks, a release newer than the table. test_driver.py judges whole verdicts;
these are the values the verdict's words are made of."""

from __future__ import annotations

import pytest

from sparkenv.cuda import driver

OPEN = "NVRM version: NVIDIA UNIX Open Kernel Module for aarch64  580.95.05  Release Build\nGCC version: 13"
PROPRIETARY = "NVRM version: NVIDIA UNIX aarch64 Kernel Module  580.95.05  Release Build\n"


@pytest.mark.parametrize(
    ("proc", "taint", "flavour"),
    [
        (OPEN, "P", "open"),  # the line names itself: the taint is not asked
        (PROPRIETARY, None, "proprietary"),
        (None, "POE", "proprietary"),  # the line hidden: a non-GPL licence taints with P
        ("", "OE", "open"),
        ("   \n", " ", None),
        (None, None, None),
        ("NVRM version: something else\n", "OE", "open"),  # a line without "Kernel Module" leaves it to taint
    ],
)
def test_the_module_flavour(proc, taint, flavour):
    assert driver.module_flavour(proc, taint) == flavour


@pytest.mark.parametrize(
    ("text", "release"),
    [
        ("13.0.2.006", (13, 0, 2)),  # CUDA_VERSION in NGC images
        ("13.1", (13, 1, None)),  # torch.version.cuda
        (" v12.8.93", (12, 8, 93)),
        ("12", None),
        ("", None),
        ("cuda 13.0", None),
    ],
)
def test_a_cuda_release(text, release):
    assert driver.cuda_release(text) == release


def test_a_release_in_the_table():
    req = driver.requirement("13.0.2")
    assert req == driver.Requirement("13.0.2", "580.95.05", (580,), True, "13.0.2")


def test_a_minor_whose_update_is_not_known_is_judged_by_its_ga():
    req = driver.requirement("13.1")
    assert req == driver.Requirement("13.1 (GA; update unknown)", "590.44.01", (580,), True, "13.1.0")


def test_an_update_the_table_lacks_is_judged_by_the_one_before():
    req = driver.requirement("12.6.5")
    assert req == driver.Requirement("12.6.5", "560.35.05", (525, 60, 13), False, "12.6.3")


def test_a_release_newer_than_the_table():
    req = driver.requirement("13.9")
    assert req is not None and (req.release, req.known) == ("13.9", False)
    newest = max(driver._table())
    assert (req.row, req.minimum) == (driver.show(newest), driver._table()[newest])


def test_no_requirement_for_what_the_table_cannot_judge():
    assert driver.requirement("11.8.0") is None  # a major the table does not hold
    assert driver.requirement("12.0") is not None
    assert driver.requirement("not a version") is None


def test_the_newest_release_a_driver_runs():
    assert driver.newest_supported(driver.version("575.57.08")) == "12.9.1"
    assert driver.newest_supported(driver.version("580.95.05")) == "13.0.2"
    assert driver.newest_supported(driver.version("470.82.01")) is None

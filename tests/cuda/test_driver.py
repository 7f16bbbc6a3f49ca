"""G1 driver compatibility: the dated table of NVIDIA's minimum drivers, judged against recorded texts."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from sparkenv.core import datafiles
from sparkenv.core.report import Status
from sparkenv.cuda import driver
from sparkenv.rules import g1_driver as judged

H200 = Path(__file__).parents[1] / "fixtures" / "machines" / "h200"


def recorded_driver() -> str:
    return driver.parse_proc_version((H200 / "proc-driver-nvidia-version.txt").read_text())


def test_real_proc_text_of_the_h200():
    assert recorded_driver() == "580.159.04"


@pytest.mark.parametrize(
    ("text", "version"),
    [
        (
            "NVRM version: NVIDIA UNIX Open Kernel Module for aarch64  580.95.05  Release Build  (dvs)  \n",
            "580.95.05",
        ),
        (
            "NVRM version: NVIDIA UNIX x86_64 Kernel Module  535.104.05  Sat Aug 19 01:15:15 UTC 2023\n",
            "535.104.05",
        ),
        ("NVRM version: NVIDIA UNIX Open Kernel Module for x86_64  570.26  Release Build\n", "570.26"),
        ("", None),
        ("garbage\n", None),
    ],
)
def test_proc_version_forms(text, version):
    """Open and proprietary kernel modules word the first line differently."""
    assert driver.parse_proc_version(text) == version


def test_recorded_h200_runs_its_image():
    """The H200 machine: kernel module 580.159.04, image CUDA_VERSION=13.0.2."""
    f = judged.judge_driver(recorded_driver(), "13.0.2")
    assert f.status is Status.PASS
    assert "needs >= 580.95.05" in f.summary


@pytest.mark.parametrize(
    ("have", "cuda", "status"),
    [
        ("580.95.05", "13.0.2.006", Status.PASS),  # NGC 25.10's CUDA_VERSION spelling
        ("580.82.07", "13.0.2", Status.WARN),  # minor version compatibility
        ("580.159.03", "13.1.1", Status.WARN),  # eugr/spark-vllm-docker#266: 13.1 image, 580 host
        ("575.57.08", "13.0.2", Status.FAIL),  # below CUDA 13's floor: nothing runs
        ("550.54.15", "12.4.1", Status.PASS),
        ("535.104.05", "12.8.1", Status.WARN),
        ("520.61.05", "12.0.0", Status.FAIL),
        ("590.48.01", "13.0", Status.PASS),  # torch.version.cuda: the update is unknown, GA is the bar
        ("590.48.01", "13.9.0", Status.WARN),  # newer than the table: says so and asks for a refresh
    ],
)
def test_driver_against_release(have, cuda, status):
    f = judged.judge_driver(have, cuda)
    assert f.status is status, f
    assert f.subject == "driver"
    if status is not Status.PASS:
        assert f.fix


def test_fail_names_the_minimum_and_a_release_this_driver_runs():
    f = judged.judge_driver("575.57.08", "13.0.2")
    assert "needs >= 580.95.05" in f.summary and "at least 580" in f.summary
    assert "use an image built for CUDA <= 12.9.1" in f.fix


def test_forward_compatibility_recognised():
    """A CUDA 13 image on a 575 host with cuda-compat 580: runs on data-center GPUs only; not on GB10."""
    dc = judged.judge_driver("575.57.08", "13.0.2", compat_libcuda="580.95.05", gpu_name="NVIDIA H200")
    assert dc.status is Status.WARN and "forward-compatibility libcuda 580.95.05" in dc.summary
    spark = judged.judge_driver("575.57.08", "13.0.2", compat_libcuda="580.95.05", gpu_name="NVIDIA GB10")
    assert spark.status is Status.FAIL
    old = judged.judge_driver("575.57.08", "13.0.2", compat_libcuda="575.57.08", gpu_name="NVIDIA H200")
    assert old.status is Status.FAIL  # a compat package older than the release needs changes nothing


def test_unknown_inputs():
    assert judged.judge_driver(None, "13.0.2").status is Status.SKIP
    assert judged.judge_driver("580.95.05", None).status is Status.INFO
    assert judged.judge_driver("580.95.05", "11.8.0").status is Status.WARN  # major not in the table


def test_table_is_dated_sourced_and_monotonic():
    data = datafiles.load("drivers")
    assert re.fullmatch(r"\d{4}-\d\d-\d\d", data["reviewed"])
    assert data["source"].startswith("https://docs.nvidia.com/cuda/cuda-toolkit-release-notes/")
    rows = sorted((tuple(map(int, k.split("."))), driver.version(v)) for k, v in data["toolkit"].items())
    minimums = [v for _, v in rows]
    assert minimums == sorted(minimums), "a later CUDA release never needs an older driver"

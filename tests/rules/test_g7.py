"""rules/g7.py, both stages both ways: GPU code that does not run on the GB10 (SM121), NVFP4 on SM121.
The installed rows read real fatbins compiled by nvcc."""

from __future__ import annotations

import pytest
import stage_facts as sf
from rule_table import Row, check, ids

from sparkenv.core.report import Status
from sparkenv.cuda import coverage

REBUILD = "install a build of mylib with kernels for 12.1"
TORCH_13 = "use a CUDA 13 torch (cu130 index or NGC) built with sm_120"


def _kernels(ctx, build: str | None, gpu=None):
    """mylib with one extension whose fatbin holds nvcc's `build` (kernel_helpers.BUILDS), audited for
    `gpu` (the GB10 by default; "none": not checked)."""
    if build:
        ctx.env().add("mylib", "1.0", files={"mylib/_k.so": ctx.kernels.so(build)})
    return sf.installed(ctx, gpu=None if gpu == "none" else coverage.gb10())


def _wheel(ctx, build: str, unread: str = ""):
    """mylib's resolved wheel at lock, its one member (nvcc's `build`) read as lock/wheel_elf.py reads
    it: the bytes through the audit's fatbin reader (environment/kernels.read_bytes)."""
    from sparkenv.cuda import elf
    from sparkenv.environment import kernels
    from sparkenv.facts.resolved import WheelElves

    data = ctx.kernels.so(build).read_bytes()
    info = elf.parse_bytes(data)
    found = kernels.read_bytes(data, "mylib/_k.so", coverage.gb10())
    elves = WheelElves((("mylib/_k.so", info),), unread, (found,) if found else ())
    return sf.resolved(sf.locked("mylib", "1.0", ("torch",)), wheel_elves={"mylib": elves})


def _arch_list(arch: list[str]):
    f = sf.live_raw("gb10")
    f.raw["torch"]["stages"]["first_op"]["arch_list"] = arch
    return f


ROWS = [
    # --- Stage.INSTALLED ---------------------------------------------------------------------------
    Row(
        "g7.installed",
        "sm_120 code runs on SM121",
        lambda c: _kernels(c, "sm120"),
        "mylib",
        Status.PASS,
        None,
        "runs on GB10",
    ),
    Row(
        "g7.installed",
        "sm_90 code only",
        lambda c: _kernels(c, "sm90"),
        "mylib",
        Status.FAIL,
        REBUILD,
        "no kernel image is available",
    ),
    Row(
        "g7.installed",
        "a little compute_90 PTX",
        lambda c: _kernels(c, "ptx90"),
        "mylib",
        Status.INFO,
        None,
        "JIT-compiled at first use",
    ),
    Row(
        "g7.installed",
        "no kernels anywhere",
        lambda c: _kernels(c, None),
        "kernels",
        Status.INFO,
        None,
        "no installed distribution carries CUDA kernels",
    ),
    Row("g7.installed", "--gpu none", lambda c: _kernels(c, None, gpu="none"), "kernels", Status.SKIP),
    # --- Stage.RESOLVED: the same judgement on a wheel's members, read at lock ----------------------
    Row(
        "g7.resolved",
        "wheel with sm_120 code",
        lambda c: _wheel(c, "sm120"),
        "mylib",
        Status.PASS,
        None,
        "read from its wheel",
    ),
    Row(
        "g7.resolved",
        "wheel with sm_90 code only",
        lambda c: _wheel(c, "sm90"),
        "mylib",
        Status.FAIL,
        REBUILD,
        "no kernel image is available",
    ),
    Row(
        "g7.resolved",
        "wheel with sm_121a (the GB10's arch-specific target)",
        lambda c: _wheel(c, "sm121a"),
        "mylib",
        Status.PASS,
        None,
        "sm_121a runs on 12.1",
    ),
    Row(
        "g7.resolved",
        "sm_90 read, another member past the budget",
        lambda c: _wheel(c, "sm90", unread="mylib/_big.so (80 MiB) past the read budget"),
        "mylib",
        Status.INFO,
        None,
        "not all read at lock",
    ),
    # --- Stage.LIVE --------------------------------------------------------------------------------
    Row(
        "g7.live",
        "GB10 with NGC's arch list",
        lambda c: sf.live_raw("gb10"),
        "capability",
        Status.PASS,
        None,
        "runs on SM121",
    ),
    Row(
        "g7.live",
        "GB10, torch without sm_120",
        lambda c: _arch_list(["sm_80", "sm_90"]),
        "capability",
        Status.FAIL,
        TORCH_13,
        "no sm_120/compute_120 code",
    ),
    Row("g7.live", "not a GB10", lambda c: sf.live_raw("h200-live"), "capability", Status.SKIP),
    Row(
        "g7.live",
        "NVFP4 intended, no kernel package to read",
        lambda c: sf.live_raw("gb10", workload=["python", "serve.py", "--quantization", "nvfp4"]),
        "nvfp4",
        Status.WARN,
        "stay on FP8",
        "runs ~32% slower than FP8",
    ),
    Row(
        "g7.live",
        "NVFP4 intended, kernels target sm_121a",
        lambda c: sf.live_raw(
            "gb10",
            workload=["python", "serve.py", "--quantization", "nvfp4"],
            kernels={"vllm": {"version": "0.13.0", "targets": ["sm_120", "sm_121a"]}},
        ),
        "nvfp4",
        Status.PASS,
        None,
        "vllm kernels target sm_121a",
    ),
]


@pytest.mark.parametrize("row", ROWS, ids=ids(ROWS))
def test_g7(row, ctx):
    check(row, ctx)

"""G7 in the gate: a live probe of a real venv's extensions (nvcc-built), replayed on GB10 facts (no GB10
here), plus TORCH_CUDA_ARCH_LIST and the known-bad host data."""

from __future__ import annotations

import json
import subprocess
import sys

import gate_helpers as gh
import pytest
from conftest import Env


@pytest.fixture(scope="module")
def live_coverage(kernels, tmp_path_factory) -> dict:
    """`sparkenv gate --python <venv>` on a real venv holding a Hopper-only and a Spark extension."""
    root = tmp_path_factory.mktemp("gate-venv")
    prefix = root / "venv"
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(prefix)], check=True, timeout=120)
    env = Env(prefix, next(prefix.glob("lib/python3*/site-packages")), "x86_64")
    env.add("ext-hopper", "1.0", files={"ext_hopper/_C.abi3.so": kernels.so("sm90")})
    env.add("ext-spark", "1.0", files={"ext_spark/_C.abi3.so": kernels.so("sm120")})
    cufft = kernels.with_section(kernels.so("sm75"), ".ldata", kernels.fatbin("fat"), "gcufft", offset=4)
    env.add("nvidia-cufft", "12.0.0.61", files={"nvidia/cu13/lib/libcufft.so.12": cufft})
    dump = root / "facts.json"
    from conftest import sparkenv

    sparkenv("gate", "--deep", "--python", str(prefix / "bin" / "python"), "--dump-facts", str(dump), "-q")
    return json.loads(dump.read_text())["kernel_coverage"]


def test_live_probe_reads_every_package(live_coverage):
    packages = live_coverage["packages"]
    assert packages["ext-hopper"]["objects"][0]["targets"] == ["sm_90"]
    assert packages["ext-spark"]["objects"][0]["targets"] == ["sm_120"]
    cufft = packages["nvidia-cufft"]["objects"][0]
    assert cufft["sections"] == [".nv_fatbin", ".ldata"] and "sm_120" in cufft["targets"]


def test_gb10_blocks_the_hopper_only_extension(run, tmp_path, live_coverage):
    facts = gh.with_changes(gh.gb10_from_reports(), kernel_coverage=live_coverage)
    r = run("gate", "--facts", gh.write(tmp_path, facts), "--policy", "strict")
    line = r.line("G7", "ext-hopper")
    assert line.startswith("G7 FAIL: ext-hopper 1.0 (ext_hopper/_C.abi3.so) cannot run on GB10 (12.1)"), line
    assert r.line("G7", "ext-spark").startswith("G7 PASS: ext-spark 1.0")
    assert r.line("G7", "nvidia-cufft").startswith("G7 PASS: nvidia-cufft 12.0.0.61")
    assert r.code == 1


def test_same_kernels_on_an_h200(run, tmp_path, live_coverage):
    """Off a GB10 the coverage is judged for the live GPU's own capability."""
    facts = gh.with_changes(gh.h200_from_outputs(), kernel_coverage=live_coverage)
    r = run("gate", "--facts", gh.write(tmp_path, facts))
    assert r.line("G7", "ext-hopper").startswith("G7 PASS: ext-hopper 1.0")
    assert r.line("G7", "ext-spark").startswith(
        "G7 FAIL: ext-spark 1.0 (ext_spark/_C.abi3.so) cannot run on capability 9.0"
    )


def test_default_mode_leaves_the_kernels_to_deep(run, tmp_path, live_coverage):
    """Without --deep the gate reads no fatbin (its start-up budget) and says where the check is."""
    facts = gh.with_changes(
        gh.gb10_from_reports(), kernel_coverage={**live_coverage, "packages": None, "shared_objects": None}
    )
    r = run("gate", "--facts", gh.write(tmp_path, facts), "--policy", "strict")
    assert r.line("G7", "kernels").startswith("G7 INFO: the kernels of every package are not read"), r.out
    assert "ext-hopper" not in r.out


@pytest.mark.parametrize(
    ("value", "status"), [("9.0a", "FAIL"), ("8.0 8.6 9.0 10.0 11.0 12.0+PTX", "PASS"), ("9.0+PTX", "WARN")]
)
def test_torch_cuda_arch_list_in_the_gate(run, tmp_path, value, status):
    facts = gh.with_changes(gh.gb10_from_reports(), env={"+": {"TORCH_CUDA_ARCH_LIST": value}})
    line = run("gate", "--facts", gh.write(tmp_path, facts)).line("G7", "TORCH_CUDA_ARCH_LIST")
    assert line.startswith(f'G7 {status}: TORCH_CUDA_ARCH_LIST="{value}" (the gate\'s environment)'), line


@pytest.mark.parametrize(("nodes", "status"), [(None, "WARN"), ("2", "FAIL")])
def test_known_bad_kernel_build(run, tmp_path, nodes, status):
    """luxingcom/aicad-nccl-optimization#1: kernel 7.0.0-1019-nvidia with CmaTotal 0 kB breaks RDMA."""
    facts = gh.with_changes(
        gh.gb10_from_reports(),
        host={"+": {"kernel": "7.0.0-1019-nvidia"}},
        meminfo={"MemTotal": 128_000_000, "MemAvailable": 120_000_000, "CmaTotal": 0},
        env={"+": {"NNODES": nodes}} if nodes else {"+": {}},
    )
    line = run("gate", "--facts", gh.write(tmp_path, facts)).line("G10", "cma-zero")
    assert line.startswith(f"G10 {status}: known host problem (cma-zero, fixed in kernel 6.17"), line
    facts["host"]["kernel"] = "6.17.0-1002-nvidia"
    assert "cma-zero" not in run("gate", "--facts", gh.write(tmp_path, facts)).out

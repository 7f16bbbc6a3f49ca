"""Kernel targets read from real fatbins that nvcc 13 builds, checked against NVIDIA's cuobjdump."""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from sparkenv.cuda import fatbin

KERNEL = (
    "__global__ void k(float* x) { x[threadIdx.x] *= 2.f; }\n"
    'extern "C" void run(float* x) { k<<<1, 32>>>(x); }\n'
)
BUILDS = {
    "spark": (
        ["compute_120,code=sm_120", "compute_121a,code=sm_121a", "compute_120,code=compute_120"],
        {"sm_120", "sm_121a", "compute_120"},
    ),
    "mixed": (
        [
            "compute_121,code=sm_121",
            "compute_120f,code=sm_120f",
            "compute_121a,code=compute_121a",
            "compute_90,code=sm_90",
        ],
        {"sm_121", "sm_120f", "compute_121a", "sm_90"},
    ),
    "hopper": (["compute_90,code=sm_90"], {"sm_90"}),
}


@pytest.fixture(scope="session")
def kernels(tmp_path_factory) -> dict[str, Path]:
    nvcc = shutil.which("nvcc")
    if nvcc is None:
        pytest.fail("nvcc (CUDA 13) is needed to build real fatbins; this machine kind ships it")
    root = tmp_path_factory.mktemp("cuda")
    (root / "k.cu").write_text(KERNEL)
    out = {}
    for name, (codes, _) in BUILDS.items():
        args = [nvcc, "-shared", "-Xcompiler", "-fPIC", "-o", f"lib{name}.so", "k.cu"]
        for code in codes:
            args[1:1] = ["-gencode", f"arch={code}"]
        subprocess.run(args, cwd=root, check=True, timeout=300, capture_output=True)
        out[name] = root / f"lib{name}.so"
    return out


@pytest.mark.parametrize("name", list(BUILDS))
def test_targets_of_real_fatbins(kernels, name):
    found = fatbin.read_targets(str(kernels[name]))
    assert not isinstance(found, str), found
    assert {t.name for t in found} == BUILDS[name][1]


def test_objects_without_kernels_and_non_elf(elves, tmp_path):
    assert fatbin.read_targets(str(elves.linked(("libcudart.so.13",)))) == []
    text = tmp_path / "libtext.so"
    text.write_text("INPUT(libfoo.so.1)")
    assert fatbin.read_targets(str(text)) == "not an ELF file"
    assert fatbin.read_targets(str(tmp_path / "missing.so")).startswith("unreadable")


@settings(
    max_examples=int(os.environ.get("SPARKENV_FUZZ_EXAMPLES", "3000")) // 3,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture],
)
@given(st.lists(st.tuples(st.integers(min_value=0), st.integers(0, 255)), min_size=1, max_size=16))
def test_damaged_fatbins_never_raise(kernels, flips):
    data = bytearray(kernels["mixed"].read_bytes())
    start = data.find(b"\x50\xed\x55\xba")  # the fatbin magic, little-endian
    for pos, value in flips:
        data[start + pos % (len(data) - start)] = value
    result = fatbin.parse_targets(lambda o, n: bytes(data[o : o + n]))
    assert isinstance(result, (list, str))


@pytest.mark.network
def test_agrees_with_cuobjdump(kernels, tmp_path):
    """NVIDIA's cuobjdump (CUDA 13 wheel) lists the same targets; it prints family cubins without the f."""
    subprocess.run(
        [
            sys.executable,
            "-m",
            "pip",
            "download",
            "-q",
            "--no-deps",
            "--only-binary=:all:",
            "-d",
            str(tmp_path),
            "nvidia-cuda-cuobjdump>=13",
        ],
        check=True,
        timeout=600,
    )
    wheel = next(tmp_path.glob("nvidia_cuda_cuobjdump-*.whl"))
    with zipfile.ZipFile(wheel) as zf:
        member = next(n for n in zf.namelist() if n.endswith("bin/cuobjdump"))
        exe = Path(zf.extract(member, tmp_path))
    exe.chmod(0o755)
    for name, lib in kernels.items():
        listed = set()
        for flag, kind in (("--list-elf", "sm"), ("--list-ptx", "compute")):
            out = subprocess.run(
                [str(exe), flag, str(lib)], capture_output=True, text=True, timeout=60
            ).stdout
            listed |= {f"{kind}_{m}" for m in re.findall(r"\.sm_(\d+[a-z]?)\.(?:cubin|ptx)", out)}
        ours = {
            t.name.removesuffix("f") if t.variant == "f" else t.name for t in fatbin.read_targets(str(lib))
        }
        assert ours == listed, (name, ours, listed)


@pytest.mark.parametrize(("build", "status"), [("spark", "PASS"), ("hopper", "WARN")])
def test_gate_reads_nvfp4_kernels_when_nvfp4_is_intended(kernels, tmp_path, run, build, status):
    """Live probe of a real venv's vLLM kernels, then a replay on GB10 facts (no GB10 here)."""
    import gate_helpers as gh
    from conftest import Env

    prefix = tmp_path / "venv"
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(prefix)], check=True, timeout=120)
    env = Env(prefix, next(prefix.glob("lib/python3*/site-packages")), "x86_64")
    env.add("vllm", "0.13.0+cu130", files={"vllm/_C.abi3.so": kernels[build]})
    dump = tmp_path / "facts.json"
    workload = ["vllm", "serve", "m", "--quantization", "nvfp4", "--gpu-memory-utilization", "0.5"]
    python = str(prefix / "bin" / "python")
    run("gate", "--python", python, "--dump-facts", str(dump), "-q")
    assert "kernels" not in json.loads(dump.read_text())  # no NVFP4 intent: nothing read
    run("gate", "--python", python, "--dump-facts", str(dump), "-q", env={"SPARKENV_NVFP4": "1"})
    live = json.loads(dump.read_text())
    assert live["kernels"]["vllm"]["targets"] == sorted(BUILDS[build][1])
    facts = gh.with_changes(gh.gb10_from_reports(), kernels=live["kernels"], workload=workload)
    line = run("gate", "--facts", gh.write(tmp_path, facts)).line("G7", "NVFP4")
    assert line.startswith(f"G7 {status}: NVFP4 is intended (workload argument nvfp4)"), line

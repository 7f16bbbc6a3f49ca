"""G7 in the audit: real extensions nvcc builds, installed as packages in a venv, judged per --gpu."""

from __future__ import annotations

import shutil
import subprocess

import pytest
from kernel_helpers import cuda_ptxas

from sparkenv.core.report import LINE_RE


@pytest.fixture
def kernel_env(env, kernels):
    env.add("ext-hopper", "1.0", files={"ext_hopper/_C.abi3.so": kernels.so("sm90")})
    env.add("ext-spark", "1.0", files={"ext_spark/_C.abi3.so": kernels.so("sm120")})
    env.add("ext-arch", "1.0", files={"ext_arch/_C.abi3.so": kernels.so("sm120a")})
    env.add("ext-nvfp4", "1.0", files={"ext_nvfp4/_C.abi3.so": kernels.so("sm121a")})
    env.add("ext-ptx", "1.0", files={"ext_ptx/_C.abi3.so": kernels.so("ptx90")})
    env.add(
        "ext-fat",
        "2.0",
        files={"ext_fat/_a.so": kernels.so("fat"), "ext_fat/_b.so": kernels.so("sm121a")},
    )
    # the nvidia-cufft layout: one sm_75 cubin in .nv_fatbin, the real kernels as data in .ldata
    cufft = kernels.with_section(kernels.so("sm75"), ".ldata", kernels.fatbin("fat"), "cufft", offset=4)
    env.add("nvidia-cufft", "12.0.0.61", files={"nvidia/cu13/lib/libcufft.so.12": cufft})
    return env


def test_default_target_is_gb10(run, kernel_env):
    r = run("audit", str(kernel_env.prefix))
    assert r.code == 1, r.out + r.err
    assert all(LINE_RE.match(ln) for ln in r.lines[:-1]), r.out
    hopper = r.line("G7", "ext-hopper")
    assert hopper.startswith("G7 FAIL: ext-hopper 1.0 (ext_hopper/_C.abi3.so) cannot run on GB10 (12.1)")
    assert "has sm_90" in hopper and "no kernel image is available" in hopper
    arch = r.line("G7", "ext-arch")
    assert arch.startswith("G7 FAIL: ext-arch 1.0") and "sm_120a is arch-specific" in arch
    assert r.line("G7", "ext-spark").startswith("G7 PASS: ext-spark 1.0")
    assert r.line("G7", "ext-nvfp4").startswith("G7 PASS: ext-nvfp4 1.0")
    assert r.line("G7", "ext-fat").startswith("G7 PASS: ext-fat 2.0: 2 objects with kernels")
    assert r.line("G7", "nvidia-cufft").startswith("G7 PASS: nvidia-cufft 12.0.0.61")  # read in .ldata
    assert r.line("G7", "ext-ptx").startswith("G7 INFO: ext-ptx 1.0 (ext_ptx/_C.abi3.so): only PTX fits 12.1")
    info = r.line("G7", "target GB10")
    assert "read the GPU code of 8 shared objects in 7 distributions" in info
    assert "1 with fatbins in data sections" in info
    assert r.lines[-1] == "verdict: blocked (2 FAIL)"


def test_gpu_option_judges_for_another_gpu(run, kernel_env):
    r = run("audit", str(kernel_env.prefix), "--gpu", "9.0", "--json")
    findings = {f["subject"]: f for f in r.json()["findings"] if f["id"] == "G7"}
    assert findings["ext-hopper"]["status"] == "PASS"
    assert findings["ext-spark"]["status"] == "FAIL"
    assert findings["nvidia-cufft"]["status"] == "PASS"
    # judged on the union of its objects: _a.so's sm_90 covers 9.0, _b.so (sm_121a only) is evidence
    assert findings["ext-fat"]["status"] == "PASS"
    assert any(e.startswith("ext_fat/_b.so: sm_121a") for e in findings["ext-fat"]["evidence"])
    assert findings["ext-spark"]["fix"].startswith("install a build of ext-spark with kernels for 9.0")
    assert r.code == 1


def test_gpu_none_skips(run, kernel_env):
    r = run("audit", str(kernel_env.prefix), "--gpu", "none")
    assert r.line("G7", "kernel coverage").startswith("G7 SKIP: kernel coverage not checked")
    assert not [ln for ln in r.lines if ln.startswith("G7 FAIL")]


@pytest.mark.parametrize("bad", ["twelve", "12.10", ""])
def test_bad_gpu_is_a_usage_error(run, env, bad):
    r = run("audit", str(env.prefix), "--gpu", bad)
    assert r.code == 2
    assert r.err.count("\n") == 1 and "--gpu" in r.err and "Traceback" not in r.err


def test_environment_without_kernels(run, env, elves):
    env.add("plain", "1.0", files={"plain/_x.so": elves.linked(("libc.so.6",))})
    r = run("audit", str(env.prefix))
    assert r.line("G7", "kernels").startswith("G7 INFO: no installed distribution carries CUDA kernels")


def test_triton_bundled_ptxas(run, env, tmp_path):
    """Triton 3.6's layout: ptxas (CUDA 12.8) and ptxas-blackwell (CUDA 13). On GB10 it uses the latter.
    The 12.8 ptxas is a stand-in file holding the version string (no CUDA 12.8 toolkit here); the CUDA 13
    one is the real ptxas of this machine's toolkit."""
    real = cuda_ptxas()
    out = subprocess.run([str(real), "--version"], capture_output=True, text=True, timeout=30).stdout
    assert "release 13." in out
    old = tmp_path / "ptxas-12.8"
    old.write_bytes(b"\x7fELF stand-in\0Cuda compilation tools, release 12.8, V12.8.93\0")
    bin_dir = "triton/backends/nvidia/bin"
    env.add("triton", "3.6.0", files={f"{bin_dir}/ptxas": old, f"{bin_dir}/ptxas-blackwell": real})
    r = run("audit", str(env.prefix))
    line = r.line("G7", "triton 3.6.0")
    assert line.startswith("G7 PASS: triton 3.6.0 compiles with its bundled ptxas-blackwell (CUDA 13.0)"), (
        line
    )
    r = run("audit", str(env.prefix), "--gpu", "9.0")
    assert r.line("G7", "triton 3.6.0").startswith(
        "G7 PASS: triton 3.6.0 compiles with its bundled ptxas (CUDA 12.8)"
    )


def test_old_triton_without_blackwell_ptxas(run, env, tmp_path):
    """pytorch-triton 3.4 (NGC 25.09/25.10) ships only a CUDA 12.8 ptxas: sm_121a is rejected unless
    TRITON_PTXAS_PATH points at a CUDA 13 one (what NGC's images set)."""
    old = tmp_path / "ptxas-12.8"
    old.write_bytes(b"\x7fELF stand-in\0Cuda compilation tools, release 12.8, V12.8.93\0")
    env.add("pytorch-triton", "3.4.0+gitc817b9b6", files={"triton/backends/nvidia/bin/ptxas": old})
    r = run("audit", str(env.prefix), env={"TRITON_PTXAS_PATH": ""})
    line = r.line("G7", "triton")
    assert line.startswith(
        "G7 WARN: pytorch-triton 3.4.0+gitc817b9b6 compiles with its bundled ptxas (CUDA 12.8)"
    )
    assert "rejects sm_121a" in line
    r = run("audit", str(env.prefix), env={"TRITON_PTXAS_PATH": str(cuda_ptxas())})
    assert r.line("G7", "triton").startswith(
        "G7 PASS: pytorch-triton 3.4.0+gitc817b9b6 compiles with TRITON_PTXAS_PATH="
    )


def test_a_changed_file_is_read_again(run, env, kernels, tmp_path):
    """A rebuilt extension is read again, whatever the audit's cache kept of the old one."""
    cache = tmp_path / "cache"
    env.add("ext-x", "1.0", files={"ext_x/_C.abi3.so": kernels.so("sm90")})
    first = run("audit", str(env.prefix), env={"SPARKENV_CACHE_DIR": str(cache)})
    assert first.line("G7", "ext-x").startswith("G7 FAIL: ext-x 1.0")
    again = run("audit", str(env.prefix), env={"SPARKENV_CACHE_DIR": str(cache)})
    assert again.out == first.out
    target = env.site / "ext_x" / "_C.abi3.so"
    target.unlink()  # a rebuilt extension: a new file (new inode, size, mtime)
    shutil.copyfile(kernels.so("sm120"), target)
    rebuilt = run("audit", str(env.prefix), env={"SPARKENV_CACHE_DIR": str(cache)})
    assert rebuilt.line("G7", "ext-x").startswith("G7 PASS: ext-x 1.0")


def test_unusable_cache_folder_is_not_fatal(run, env, kernels, tmp_path):
    blocker = tmp_path / "file"
    blocker.write_text("")
    env.add("ext-x", "1.0", files={"ext_x/_C.abi3.so": kernels.so("sm120")})
    r = run("audit", str(env.prefix), env={"SPARKENV_CACHE_DIR": str(blocker / "sub")})
    assert r.code == 0 and r.line("G7", "ext-x").startswith("G7 PASS: ext-x 1.0")

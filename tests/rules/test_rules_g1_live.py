"""rules/g1_live.py beyond its table rows: each way torch's CUDA build is read on the running machine
(static: its files; --deep: the first CUDA operation), the exact words and fix of each finding, on facts
snapshots recorded on an H200 (tests/fixtures/facts) with one value changed, and the NGC build's version
from the shipped profile."""

from __future__ import annotations

from dataclasses import replace

import stage_facts as sf

from sparkenv.core.report import Status
from sparkenv.environment import profiles
from sparkenv.rules import g1_live
from sparkenv.rules.g1_live import LIVE_FIX

CU13 = "/opt/torch/.venv/lib/python3.12/site-packages/nvidia/cu13/lib"
NGC_TORCH = profiles.load("ngc-25.11").provides["torch"]  # 2.10.0a0+b558c986e8.nv25.11
GPUS = "run the container with --gpus all (or the NVIDIA runtime)"


def _torch(facts):
    [f] = [f for f in g1_live.live(facts) if f.subject == "torch"]
    return f


def _static(**edits):
    return _torch(sf.live_raw("h200-static", **edits))


def _deep(**edits):
    return _torch(sf.live_raw("h200-live", **edits))


# --- static: torch's files ---------------------------------------------------------------------------


def test_static_pass_names_the_runtime_it_found():
    f = _static()
    assert f.status is Status.PASS
    assert f.summary == (
        f"static: torch 2.11.0+cu130 built for CUDA 13.0; libtorch_cuda.so → libcudart.so.13 found at "
        f"{CU13}/libcudart.so.13"
    )
    assert f.evidence[0].startswith(f"torch/lib/libtorch_cuda.so → libcudart.so.13: {CU13}/libcudart.so.13 (")
    assert f.evidence[-1].startswith("the first CUDA operation is not run by default: --deep")
    assert f.fix is None


def test_static_ngc_torch_is_expected_without_a_cu_label():
    f = _static(torch_static__version=NGC_TORCH)
    assert f.status is Status.PASS
    assert f"torch {NGC_TORCH} built for CUDA 13.0 (NGC build: no +cu label, as expected);" in f.summary


def test_static_without_cudart_proves_with_the_first_library_or_the_file():
    needed = [{"soname": "libcublas.so.13", "major": 13, "found": "/x/libcublas.so.13", "how": "rpath"}]
    f = _static(torch_static__needed=needed, torch_static__cuda=None)
    assert f.summary.endswith(
        "built for CUDA 13; libtorch_cuda.so → libcublas.so.13 found at /x/libcublas.so.13"
    )
    f = _static(torch_static__needed=[])
    assert f.summary.endswith("built for CUDA 13.0; torch/lib/libtorch_cuda.so read")


def test_static_not_installed_and_unreadable():
    f = _static(torch_static={"found": False})
    assert f.status is Status.SKIP and f.summary == "torch is not installed: nothing CUDA to check"
    f = _static(torch_static={"found": True, "version": "2.9.1", "error": "permission denied"})
    assert f.status is Status.ERROR and f.summary == "torch 2.9.1: cannot read its files: permission denied"
    f = _static(torch_static={"found": True, "error": "permission denied"})
    assert f.summary.startswith("torch (version unknown): cannot read")


def test_static_cpu_only_says_what_version_py_says():
    f = _static(torch_static__library=None, torch_static__cuda=None)
    assert f.status is Status.FAIL and f.fix == LIVE_FIX
    assert f.summary == (
        "torch 2.11.0+cu130 is a CPU-only build (torch/version.py says cuda = None; no "
        "torch/lib/libtorch_cuda.so)"
    )
    f = _static(torch_static__library=None)
    assert "(torch/version.py says CUDA 13.0; no torch/lib/libtorch_cuda.so)" in f.summary


def test_static_another_major_by_its_links_or_its_label():
    needed = [
        {
            "soname": "libcudart.so.12",
            "major": 12,
            "found": "/usr/local/cuda-12/lib/libcudart.so.12",
            "how": "ld",
        },
        {
            "soname": "libcublas.so.12",
            "major": 12,
            "found": "/usr/local/cuda-12/lib/libcublas.so.12",
            "how": "ld",
        },
    ]
    f = _static(torch_static__needed=needed)
    assert f.status is Status.FAIL and f.fix == LIVE_FIX
    assert f.summary == (
        "torch 2.11.0+cu130 needs CUDA 12: torch/lib/libtorch_cuda.so links libcudart.so.12, libcublas.so.12 "
        "(CUDA 12) — target is CUDA 13"
    )
    f = _static(torch_static__cuda="12.8")
    assert (
        f.summary == "torch 2.11.0+cu130 needs CUDA 12: torch/version.py says CUDA 12.8 — target is CUDA 13"
    )
    assert _static(torch_static__cuda="unknown").status is Status.PASS  # no major in it: not another one


def test_static_a_library_the_loader_will_not_find():
    needed = [
        {"soname": "libcudart.so.13", "major": 13, "found": f"{CU13}/libcudart.so.13", "how": "rpath"},
        {"soname": "libcublas.so.13", "major": 13, "found": None, "how": "not on any search path"},
    ]
    f = _static(torch_static__needed=needed)
    assert f.status is Status.FAIL
    assert f.summary == (
        "torch 2.11.0+cu130: torch/lib/libtorch_cuda.so needs libcublas.so.13, which the loader will not "
        "find (not on any search path)"
    )
    assert f.evidence[1] == "torch/lib/libtorch_cuda.so → libcublas.so.13: not on any search path"
    assert f.fix == (
        "install the CUDA 13 runtime wheels torch requires (pip install --force-reinstall torch from the "
        "cu130 index), or put the CUDA 13 runtime on the loader path"
    )


def test_static_a_library_of_another_cpu():
    needed = [
        {
            "soname": "libcudart.so.13",
            "major": 13,
            "found": "/x/libcudart.so.13",
            "how": "ld",
            "machine": "aarch64",
        }
    ]
    f = _static(torch_static__needed=needed)
    assert f.status is Status.FAIL and f.fix == LIVE_FIX
    assert f.summary == "torch 2.11.0+cu130: /x/libcudart.so.13 is built for aarch64, not x86_64"


def test_static_no_gpu_warns_and_strict_in_front_of_a_workload_fails():
    facts = sf.live_raw("h200-static", driver={}, gpu={"gpus": []})
    f = _torch(facts)
    assert f.status is Status.WARN and f.fix == GPUS
    assert f.summary == "torch 2.11.0+cu130 built for CUDA 13.0, but no NVIDIA driver or GPU is visible"
    assert _torch(replace(facts, strict=True)).status is Status.WARN  # no workload: nothing stopped
    strict = replace(
        sf.live_raw("h200-static", driver={}, gpu={"gpus": []}, workload=["python", "t.py"]), strict=True
    )
    assert _torch(strict).status is Status.FAIL
    # a GPU reading without a driver version: the GPU is there
    assert _static(driver={}).status is Status.PASS


# --- --deep: the torch probe -------------------------------------------------------------------------


def test_deep_pass_says_how_long_the_first_operation_took():
    f = _deep()
    assert f.status is Status.PASS
    assert f.summary == "torch 2.11.0+cu130 built for CUDA 13.0; first CUDA operation ran in 0.162 s"
    assert f.evidence == ("import 4.187 s", "cudnn 91900")
    f = _deep(deep_cache={"hit": True, "taken_at": "2026-11-30T10:00:00Z"})
    assert f.summary.endswith(
        "ran in 0.162 s (deep probe of 2026-11-30T10:00:00Z remembered for this image, driver and GPU)"
    )
    f = _deep(torch__stages__imported__version=NGC_TORCH)
    assert f"torch {NGC_TORCH} built for CUDA 13.0 (NGC build: no +cu label, as expected); first" in f.summary


def test_deep_import_failures():
    f = _deep(torch__stages={"import_error": {"error": "ModuleNotFoundError: No module named 'torch'"}})
    assert f.status is Status.SKIP and f.summary == "torch is not installed: nothing CUDA to check"
    error = "ImportError: libcudnn.so.9: cannot open shared object file"
    f = _deep(torch__stages={"import_error": {"error": error}})
    assert f.status is Status.FAIL and f.summary == f"import torch fails: {error}"
    assert f.evidence == (error,) and f.fix == LIVE_FIX
    other = "ModuleNotFoundError: No module named 'numpy'"
    assert _deep(torch__stages={"import_error": {"error": other}}).status is Status.FAIL


def test_deep_probe_killed_or_timed_out():
    f = _deep(torch__timed_out=True, torch__stderr_tail=["waiting"])
    assert f.status is Status.ERROR
    assert f.summary == "the first CUDA operation did not finish in time (killed at the gate's deadline)"
    assert f.evidence == ("waiting",)
    f = _deep(torch__stages={"start": {}}, torch__timed_out=True)
    assert f.summary.startswith("import torch did not finish in time")
    f = _deep(torch__signal="SIGSEGV", torch__stderr_tail=["a", "Segmentation fault"])
    assert f.status is Status.FAIL and f.fix == LIVE_FIX
    assert f.summary == "the first CUDA operation was killed by SIGSEGV: Segmentation fault"
    f = _deep(torch__signal="SIGKILL")
    assert f.summary == "the first CUDA operation was killed by SIGKILL"


def test_deep_probe_without_an_answer():
    f = _deep(torch__stages={"start": {}}, torch__stderr_tail=["x", "Traceback: boom"])
    assert f.status is Status.ERROR and f.summary == "the torch probe gave no answer: Traceback: boom"
    f = _deep(torch__stages={"start": {}})
    assert f.summary == "the torch probe gave no answer: no output"


def test_deep_built_for_another_major_or_none():
    f = _deep(torch__stages__imported__cuda="12.8")
    assert f.status is Status.FAIL and f.fix == LIVE_FIX
    assert f.summary == "torch 2.11.0+cu130 is built for CUDA 12.8 — target is CUDA 13"
    f = _deep(torch__stages__imported__cuda=None)
    assert f.summary == "torch 2.11.0+cu130 is a CPU-only build (torch.version.cuda is None)"


def test_deep_first_operation_errors_and_no_gpu():
    f = _deep(torch__stages__cuda_error={"error": "CUDA error: no kernel image is available"})
    assert f.status is Status.FAIL
    assert f.summary == (
        "torch 2.11.0+cu130 (CUDA 13.0): the first CUDA operation fails: "
        "CUDA error: no kernel image is available"
    )
    assert f.fix == "check the driver (nvidia-smi) and that no CUDA 12 library shadows CUDA 13"
    f = _deep(torch__stages__first_op_error={"error": "RuntimeError: out of memory"})
    assert f.evidence == ("RuntimeError: out of memory",)
    f = _deep(torch__stages__devices={"available": False, "count": 0})
    assert f.status is Status.WARN and f.fix == GPUS
    assert f.summary == "torch 2.11.0+cu130 built for CUDA 13.0, but no GPU is visible"
    strict = replace(
        sf.live_raw("h200-live", torch__stages__devices={"available": False}, workload=["python", "t.py"]),
        strict=True,
    )
    assert _torch(strict).status is Status.FAIL


# --- the loader path and the driver ------------------------------------------------------------------


def test_loader_names_the_first_three_cuda_12_runtimes():
    hits = [f"/opt/{n}/libcudart.so.12" for n in "abcd"]
    [f] = [
        f
        for f in g1_live.live(sf.live_raw("h200-static", loader={"libcudart12": hits}))
        if f.subject == "libcudart.so.12"
    ]
    assert f.summary == (
        "a CUDA 12 runtime is on the loader path: /opt/a/libcudart.so.12, /opt/b/libcudart.so.12, "
        "/opt/c/libcudart.so.12"
    )
    assert f.evidence == tuple(hits)
    assert f.fix == "remove it from LD_LIBRARY_PATH / ldconfig, or a CUDA 12 extension will load it silently"
    assert not [
        f for f in g1_live.live(sf.live_raw("h200-static", loader=None)) if f.subject == "libcudart.so.12"
    ]


def _driver(facts):
    return [f for f in g1_live.live(facts) if f.subject not in ("torch", "libcudart.so.12")]


def test_driver_is_judged_against_torchs_cuda_static_and_deep():
    static = _driver(sf.live_raw("h200-static"))
    assert static and any(
        "580.159.04" in f.summary and "PyTorch 2.11.0+cu130" in f.summary for f in static
    ), static
    # CPU-only torch (no libtorch_cuda): no CUDA release to judge the driver against
    assert not any(
        "PyTorch" in f.summary for f in _driver(sf.live_raw("h200-static", torch_static__library=None))
    )
    deep = _driver(sf.live_raw("h200-live", driver={"version": "580.95.05"}))
    assert any("PyTorch 2.11.0+cu130" in f.summary for f in deep), deep
    cpu = _driver(sf.live_raw("h200-live", torch__stages__imported__cuda=None))
    assert not any("PyTorch" in f.summary for f in cpu), cpu

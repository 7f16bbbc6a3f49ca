"""G1 live: torch's CUDA major, CPU-only builds, the first CUDA operation, leftover libcudart.so.12."""

from __future__ import annotations

from sparkenv.cuda import rules
from sparkenv.gate.view import GateFacts
from sparkenv.report import Finding, Status

FIX = "reinstall torch from https://download.pytorch.org/whl/cu130 or use the NGC image"


def check(f: GateFacts) -> list[Finding]:
    err = f.error_finding("G1", "torch", "torch")
    out = [err] if err else [_torch(f)]
    out += _loader(f)
    return out


def _torch(f: GateFacts) -> Finding:
    probe = f.section("torch") or {}
    stages = f.torch_stages
    target = rules.target_major()
    if "import_error" in stages:
        error = stages["import_error"]["error"]
        if error.startswith("ModuleNotFoundError") and "'torch'" in error:
            return Finding("G1", Status.SKIP, "torch is not installed: nothing CUDA to check", "torch")
        return Finding("G1", Status.FAIL, f"import torch fails: {error}", "torch", (error,), FIX)
    where = "the first CUDA operation" if "devices" in stages else "import torch"
    if probe.get("timed_out"):  # killed by us at the deadline: the check could not run, not a verdict
        return Finding(
            "G1",
            Status.ERROR,
            f"{where} did not finish in time (killed at the gate's deadline)",
            "torch",
            tuple(probe.get("stderr_tail") or ()),
        )
    if probe.get("signal"):
        tail = f": {probe['stderr_tail'][-1]}" if probe.get("stderr_tail") else ""
        return Finding(
            "G1",
            Status.FAIL,
            f"{where} was killed by {probe['signal']}{tail}",
            "torch",
            tuple(probe.get("stderr_tail") or ()),
            FIX,
        )
    t = f.torch
    if t is None:
        tail = (probe.get("stderr_tail") or ["no output"])[-1]
        return Finding("G1", Status.ERROR, f"the torch probe gave no answer: {tail}", "torch")
    version, cuda = t.get("version"), t.get("cuda")
    if not cuda:
        return Finding(
            "G1",
            Status.FAIL,
            f"torch {version} is a CPU-only build (torch.version.cuda is None)",
            "torch",
            (),
            FIX,
        )
    major = int(str(cuda).split(".")[0])
    label = " (NGC build: no +cu label, as expected)" if rules.ngc_release(str(version)) else ""
    if major != target:
        return Finding(
            "G1",
            Status.FAIL,
            f"torch {version} is built for CUDA {cuda} — target is CUDA {target}",
            "torch",
            (),
            FIX,
        )
    if "cuda_error" in stages or "first_op_error" in stages:
        error = (stages.get("cuda_error") or stages.get("first_op_error"))["error"]
        return Finding(
            "G1",
            Status.FAIL,
            f"torch {version} (CUDA {cuda}): the first CUDA operation fails: {error}",
            "torch",
            (error,),
            "check the driver (nvidia-smi) and that no CUDA 12 library shadows CUDA 13",
        )
    devices = stages.get("devices") or {}
    if not devices.get("available"):
        return Finding(
            "G1",
            Status.WARN,
            f"torch {version} built for CUDA {cuda}{label}, but no GPU is visible",
            "torch",
            (),
            "run the container with --gpus all (or the NVIDIA runtime)",
        )
    d = f.device or {}
    return Finding(
        "G1",
        Status.PASS,
        f"torch {version} built for CUDA {cuda}{label}; first CUDA operation ran in "
        f"{d.get('first_op_s', '?')} s",
        "torch",
        (f"import {t.get('import_s')} s", f"cudnn {t.get('cudnn')}"),
    )


def _loader(f: GateFacts) -> list[Finding]:
    loader = f.section("loader")
    if loader is None:
        return []
    hits = loader.get("libcudart12") or []
    if not hits:
        return []
    return [
        Finding(
            "G1",
            Status.WARN,
            f"a CUDA 12 runtime is on the loader path: {', '.join(hits[:3])}",
            "libcudart.so.12",
            tuple(hits),
            "remove it from LD_LIBRARY_PATH / ldconfig, or a CUDA 12 extension will load it silently",
        )
    ]

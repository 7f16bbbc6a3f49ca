"""G1 live: torch's CUDA major, CPU-only builds, the driver, leftover libcudart.so.12.

Default (static) mode proves it from files: torch/version.py, the DT_NEEDED entries of libtorch_cuda.so
resolved the way the loader will, and the driver's version. --deep (and every snapshot taken before the
static mode existed) judges the isolated torch probe: import, first CUDA operation.
"""

from __future__ import annotations

from typing import Any

from sparkenv.cuda import rules
from sparkenv.gate.driver_floor import driver_supports
from sparkenv.gate.view import GateFacts
from sparkenv.report import Finding, Status

FIX = "reinstall torch from https://download.pytorch.org/whl/cu130 or use the NGC image"
DRIVER_FIX = (
    "update the NVIDIA driver (DGX OS: sudo apt update && sudo apt full-upgrade), "
    "or use an image built for it"
)


def check(f: GateFacts) -> list[Finding]:
    if f.deep or f.section("torch") is not None:
        err = f.error_finding("G1", "torch", "torch")
        out = [err] if err else [_torch(f)]
    else:
        err = f.error_finding("G1", "torch_static", "torch")
        out = [err] if err else [_static(f)]
    out += _loader(f)
    return out


def _driver(f: GateFacts, major: int, version: str) -> Finding | None:
    """FAIL when the driver is too old for torch's CUDA major; None when it is new enough or unknown."""
    driver = f.driver_version
    if driver is None:
        return None
    verdict = driver_supports(driver, major)
    cuda_drv = f.gpu_readings.get("cuda_driver_version")
    if verdict.ok is False or (cuda_drv and int(str(cuda_drv).split(".")[0]) < major):
        why = (
            f"older than the {verdict.minimum} CUDA {major} needs"
            if verdict.ok is False
            else (f"supports CUDA up to {cuda_drv}")
        )
        return Finding(
            "G1",
            Status.FAIL,
            f"torch {version} needs CUDA {major}, but driver {driver} is {why}",
            "torch",
            (f"driver {driver}", f"minimum per CUDA major: {verdict.source}"),
            DRIVER_FIX,
        )
    return None


def _driver_proof(f: GateFacts, major: int) -> str:
    driver = f.driver_version
    if driver is None:
        return ""
    verdict = driver_supports(driver, major)
    if verdict.ok:
        return f"; driver {driver} ≥ {verdict.minimum} for CUDA {major}"
    return f"; driver {driver}"


def _static(f: GateFacts) -> Finding:
    s = f.section("torch_static") or {}
    if not s.get("found"):
        return Finding("G1", Status.SKIP, "torch is not installed: nothing CUDA to check", "torch")
    version = s.get("version") or "(version unknown)"
    if s.get("error"):
        return Finding("G1", Status.ERROR, f"torch {version}: cannot read its files: {s['error']}", "torch")
    needed: list[dict[str, Any]] = s.get("needed") or []
    lib = s.get("library")
    cuda = s.get("cuda")
    if not lib:
        how = "torch/version.py says cuda = None" if not cuda else f"torch/version.py says CUDA {cuda}"
        return Finding(
            "G1",
            Status.FAIL,
            f"torch {version} is a CPU-only build ({how}; no torch/lib/libtorch_cuda.so)",
            "torch",
            (),
            FIX,
        )
    target = rules.target_major()
    evidence = tuple(
        f"{lib} → {n['soname']}: " + (f"{n['found']} ({n['how']})" if n.get("found") else str(n.get("how")))
        for n in needed
    )
    wrong = [n for n in needed if n.get("major") is not None and n["major"] != target]
    label_major = int(str(cuda).split(".")[0]) if cuda and str(cuda).split(".")[0].isdigit() else None
    if wrong or (label_major is not None and label_major != target):
        what = (
            f"{lib} links {', '.join(n['soname'] for n in wrong)} (CUDA {wrong[0]['major']})"
            if wrong
            else f"torch/version.py says CUDA {cuda}"
        )
        return Finding(
            "G1",
            Status.FAIL,
            f"torch {version} needs CUDA {wrong[0]['major'] if wrong else label_major}: {what} "
            f"— target is CUDA {target}",
            "torch",
            evidence,
            FIX,
        )
    missing = [n for n in needed if not n.get("found")]
    if missing:
        first = missing[0]
        return Finding(
            "G1",
            Status.FAIL,
            f"torch {version}: {lib} needs {first['soname']}, which the loader will not find "
            f"({first.get('how')})",
            "torch",
            evidence,
            "install the CUDA 13 runtime wheels torch requires (pip install --force-reinstall torch from the "
            "cu130 index), or put the CUDA 13 runtime on the loader path",
        )
    alien = [n for n in needed if n.get("machine")]
    if alien:
        return Finding(
            "G1",
            Status.FAIL,
            f"torch {version}: {alien[0]['found']} is built for {alien[0]['machine']}, "
            f"not {s.get('machine')}",
            "torch",
            evidence,
            FIX,
        )
    major = label_major or target
    drv = _driver(f, major, version)
    if drv:
        return drv
    proof = next((n for n in needed if n["soname"].startswith("libcudart")), needed[0] if needed else None)
    how = (
        f"{lib.rsplit('/', 1)[-1]} → {proof['soname']} found at {proof['found']}" if proof else f"{lib} read"
    )
    ngc = " (NGC build: no +cu label, as expected)" if rules.ngc_release(str(version)) else ""
    if f.driver_version is None and not f.gpu0:
        return Finding(
            "G1",
            Status.WARN,
            f"torch {version} built for CUDA {cuda or major}{ngc}, but no NVIDIA driver or GPU is visible",
            "torch",
            evidence,
            "run the container with --gpus all (or the NVIDIA runtime)",
        )
    return Finding(
        "G1",
        Status.PASS,
        f"static: torch {version} built for CUDA {cuda or major}{ngc}; {how}{_driver_proof(f, major)}",
        "torch",
        (
            *evidence,
            "the first CUDA operation is not run by default: --deep (or SPARKENV_GATE_DEEP=1) runs it",
        ),
    )


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
    drv = _driver(f, major, str(version))
    if drv:
        return drv
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

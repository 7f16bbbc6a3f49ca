"""G1 at Stage.LIVE: the running machine (sparkenv gate): torch's CUDA build read from its files (or, with
--deep, the first CUDA operation), the driver against it, a CUDA 12 runtime on the loader path."""

from __future__ import annotations

from functools import partial
from typing import TYPE_CHECKING, Any

from sparkenv.core.report import Finding, GotchaId, Status
from sparkenv.cuda import rules
from sparkenv.rules import data_age

if TYPE_CHECKING:
    from sparkenv.facts.live import GateFacts

from sparkenv.rules.g1_declared import fix_for
from sparkenv.rules.g1_driver import judge_driver

_finding = partial(Finding, GotchaId.G1)  # every finding of this module is G1's

# The same fix check, lock and audit give torch built for another CUDA major or for none.
LIVE_FIX = fix_for("torch", "label")


def _no_gpu_status(f: GateFacts) -> Status:
    """CUDA torch and no GPU visible: the workload's first CUDA call fails. Under --policy strict, in
    front of a workload, that stops the start (FAIL); otherwise a WARN (a CPU-only job may be meant)."""
    return Status.FAIL if f.strict and f.workload else Status.WARN


def live(f: GateFacts) -> list[Finding]:
    if f.deep or f.section("torch") is not None:
        err = f.error_finding(GotchaId.G1, "torch", "torch")
        out = [err] if err else [_torch(f)]
    else:
        err = f.error_finding(GotchaId.G1, "torch_static", "torch")
        out = [err] if err else [_static(f)]
    out += _driver(f)
    out += data_age.driver(GotchaId.G1, f.driver_version)
    out += _loader(f)
    return out


def _driver(f: GateFacts) -> list[Finding]:
    """The driver against the CUDA release torch was built for, by the one driver judgement
    (sparkenv.cuda.driver, NVIDIA's dated table); nothing when the driver or torch's CUDA is unknown."""
    driver = f.driver_version
    if f.deep or f.section("torch") is not None:
        version, cuda = (f.torch or {}).get("version"), (f.torch or {}).get("cuda")
    else:
        s = f.section("torch_static") or {}
        version, cuda = s.get("version"), s.get("cuda") if s.get("library") else None
    if not driver or not cuda:
        return []
    where = f"PyTorch {version}"
    return [
        judge_driver(driver, str(cuda), compat_libcuda=f.compat_libcuda, gpu_name=f.gpu_name, where=where)
    ]


def _static(f: GateFacts) -> Finding:
    """torch's CUDA build read from its files, without importing it: each step a finding or None."""
    s = f.section("torch_static") or {}
    version = s.get("version") or "(version unknown)"
    if not s.get("found"):
        return _finding(
            status=Status.SKIP, summary="torch is not installed: nothing CUDA to check", subject="torch"
        )
    if s.get("error"):
        return _finding(
            status=Status.ERROR,
            summary=f"torch {version}: cannot read its files: {s['error']}",
            subject="torch",
        )
    lib, cuda = s.get("library"), s.get("cuda")
    if not lib:
        how = "torch/version.py says cuda = None" if not cuda else f"torch/version.py says CUDA {cuda}"
        return _finding(
            status=Status.FAIL,
            summary=f"torch {version} is a CPU-only build ({how}; no torch/lib/libtorch_cuda.so)",
            subject="torch",
            fix=LIVE_FIX,
        )
    needed: list[dict[str, Any]] = s.get("needed") or []
    evidence = tuple(
        f"{lib} → {n['soname']}: " + (f"{n['found']} ({n['how']})" if n.get("found") else str(n.get("how")))
        for n in needed
    )
    return (
        _static_other_major(version, lib, cuda, needed, evidence)
        or _static_unloadable(s, version, lib, needed, evidence)
        or _static_built(f, version, lib, cuda, needed, evidence)
    )


def _label_major(cuda: Any) -> int | None:
    head = str(cuda).split(".")[0] if cuda else ""
    return int(head) if head.isdigit() else None


def _static_other_major(
    version: str, lib: str, cuda: Any, needed: list[dict[str, Any]], evidence: tuple[str, ...]
) -> Finding | None:
    """libtorch_cuda links another major's libraries, or torch/version.py names another major."""
    target = rules.target_major()
    wrong = [n for n in needed if n.get("major") is not None and n["major"] != target]
    label_major = _label_major(cuda)
    if not wrong and (label_major is None or label_major == target):
        return None
    what = (
        f"{lib} links {', '.join(n['soname'] for n in wrong)} (CUDA {wrong[0]['major']})"
        if wrong
        else f"torch/version.py says CUDA {cuda}"
    )
    return _finding(
        status=Status.FAIL,
        summary=f"torch {version} needs CUDA {wrong[0]['major'] if wrong else label_major}: {what} "
        f"— target is CUDA {target}",
        subject="torch",
        evidence=evidence,
        fix=LIVE_FIX,
    )


def _static_unloadable(
    s: dict[str, Any], version: str, lib: str, needed: list[dict[str, Any]], evidence: tuple[str, ...]
) -> Finding | None:
    """A library libtorch_cuda needs that the loader will not find, or one built for another CPU."""
    missing = [n for n in needed if not n.get("found")]
    if missing:
        first = missing[0]
        return _finding(
            status=Status.FAIL,
            summary=f"torch {version}: {lib} needs {first['soname']}, which the loader will not find "
            f"({first.get('how')})",
            subject="torch",
            evidence=evidence,
            fix="install the CUDA 13 runtime wheels torch requires (pip install --force-reinstall torch from "
            "the cu130 index), or put the CUDA 13 runtime on the loader path",
        )
    alien = [n for n in needed if n.get("machine")]
    if alien:
        return _finding(
            status=Status.FAIL,
            summary=f"torch {version}: {alien[0]['found']} is built for {alien[0]['machine']}, "
            f"not {s.get('machine')}",
            subject="torch",
            evidence=evidence,
            fix=LIVE_FIX,
        )
    return None


def _static_built(
    f: GateFacts, version: str, lib: str, cuda: Any, needed: list[dict[str, Any]], evidence: tuple[str, ...]
) -> Finding:
    """A CUDA build for the target whose libraries all load: PASS, or WARN when no GPU is visible."""
    major = _label_major(cuda) or rules.target_major()
    proof = next((n for n in needed if n["soname"].startswith("libcudart")), needed[0] if needed else None)
    how = (
        f"{lib.rsplit('/', 1)[-1]} → {proof['soname']} found at {proof['found']}" if proof else f"{lib} read"
    )
    ngc = " (NGC build: no +cu label, as expected)" if rules.ngc_release(str(version)) else ""
    if f.driver_version is None and not f.gpu0:
        return _finding(
            status=_no_gpu_status(f),
            summary=f"torch {version} built for CUDA {cuda or major}{ngc}, but no NVIDIA driver or GPU is "
            "visible",
            subject="torch",
            evidence=evidence,
            fix="run the container with --gpus all (or the NVIDIA runtime)",
        )
    return _finding(
        status=Status.PASS,
        summary=f"static: torch {version} built for CUDA {cuda or major}{ngc}; {how}",
        subject="torch",
        evidence=(
            *evidence,
            "the first CUDA operation is not run by default: --deep (or SPARKENV_GATE_DEEP=1) runs it",
        ),
    )


def _torch(f: GateFacts) -> Finding:
    """--deep: torch imported in an isolated process and the first CUDA operation run."""
    stopped = _torch_stopped(f)
    if stopped:
        return stopped
    t = f.torch
    if t is None:
        tail = ((f.section("torch") or {}).get("stderr_tail") or ["no output"])[-1]
        return _finding(
            status=Status.ERROR, summary=f"the torch probe gave no answer: {tail}", subject="torch"
        )
    return _torch_built(t) or _torch_ran(f, t)


def _torch_stopped(f: GateFacts) -> Finding | None:
    """The probe stopped short: torch absent, its import failing, or the probe killed."""
    probe = f.section("torch") or {}
    stages = f.torch_stages
    if "import_error" in stages:
        error = stages["import_error"]["error"]
        if error.startswith("ModuleNotFoundError") and "'torch'" in error:
            return _finding(
                status=Status.SKIP,
                summary="torch is not installed: nothing CUDA to check",
                subject="torch",
            )
        return _finding(
            status=Status.FAIL,
            summary=f"import torch fails: {error}",
            subject="torch",
            evidence=(error,),
            fix=LIVE_FIX,
        )
    where = "the first CUDA operation" if "devices" in stages else "import torch"
    if probe.get("timed_out"):  # killed by us at the deadline: the check could not run, not a verdict
        return _finding(
            status=Status.ERROR,
            summary=f"{where} did not finish in time (killed at the gate's deadline)",
            subject="torch",
            evidence=tuple(probe.get("stderr_tail") or ()),
        )
    if probe.get("signal"):
        tail = f": {probe['stderr_tail'][-1]}" if probe.get("stderr_tail") else ""
        return _finding(
            status=Status.FAIL,
            summary=f"{where} was killed by {probe['signal']}{tail}",
            subject="torch",
            evidence=tuple(probe.get("stderr_tail") or ()),
            fix=LIVE_FIX,
        )
    return None


def _torch_built(t: dict[str, Any]) -> Finding | None:
    """torch.version.cuda: none (CPU-only) or another major than the target's."""
    target = rules.target_major()
    version, cuda = t.get("version"), t.get("cuda")
    if not cuda:
        return _finding(
            status=Status.FAIL,
            summary=f"torch {version} is a CPU-only build (torch.version.cuda is None)",
            subject="torch",
            fix=LIVE_FIX,
        )
    if int(str(cuda).split(".")[0]) != target:
        return _finding(
            status=Status.FAIL,
            summary=f"torch {version} is built for CUDA {cuda} — target is CUDA {target}",
            subject="torch",
            fix=LIVE_FIX,
        )
    return None


def _torch_ran(f: GateFacts, t: dict[str, Any]) -> Finding:
    """The first CUDA operation: its error, no GPU visible, or the time it took."""
    stages = f.torch_stages
    version, cuda = t.get("version"), t.get("cuda")
    label = " (NGC build: no +cu label, as expected)" if rules.ngc_release(str(version)) else ""
    if "cuda_error" in stages or "first_op_error" in stages:
        error = (stages.get("cuda_error") or stages.get("first_op_error"))["error"]
        return _finding(
            status=Status.FAIL,
            summary=f"torch {version} (CUDA {cuda}): the first CUDA operation fails: {error}",
            subject="torch",
            evidence=(error,),
            fix="check the driver (nvidia-smi) and that no CUDA 12 library shadows CUDA 13",
        )
    devices = stages.get("devices") or {}
    if not devices.get("available"):
        return _finding(
            status=_no_gpu_status(f),
            summary=f"torch {version} built for CUDA {cuda}{label}, but no GPU is visible",
            subject="torch",
            fix="run the container with --gpus all (or the NVIDIA runtime)",
        )
    d = f.device or {}
    cache = f.raw.get("deep_cache") or {}
    when = (
        f" (deep probe of {cache.get('taken_at')} remembered for this image, driver and GPU)"
        if cache.get("hit")
        else ""
    )
    return _finding(
        status=Status.PASS,
        summary=f"torch {version} built for CUDA {cuda}{label}; first CUDA operation ran in "
        f"{d.get('first_op_s', '?')} s{when}",
        subject="torch",
        evidence=(f"import {t.get('import_s')} s", f"cudnn {t.get('cudnn')}"),
    )


def _loader(f: GateFacts) -> list[Finding]:
    loader = f.section("loader")
    if loader is None:
        return []
    hits = loader.get("libcudart12") or []
    if not hits:
        return []
    return [
        _finding(
            status=Status.WARN,
            summary=f"a CUDA 12 runtime is on the loader path: {', '.join(hits[:3])}",
            subject="libcudart.so.12",
            evidence=tuple(hits),
            fix="remove it from LD_LIBRARY_PATH / ldconfig, or a CUDA 12 extension will load it silently",
        )
    ]

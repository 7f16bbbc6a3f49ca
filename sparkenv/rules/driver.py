"""G1: can this host driver run that CUDA release, and is the user-space libcuda the loaded kernel
module's? One judgement for the gate (rules/g1.py) and `build --driver`, over the versions
sparkenv/cuda/driver.py parses and its dated table (data/drivers.toml, NVIDIA's release notes)."""

from __future__ import annotations

from collections.abc import Iterable

from sparkenv import datafiles
from sparkenv.cuda.driver import (
    SUBJECT,
    libcuda_version,
    newest_supported,
    requirement,
    reviewed,
    show,
    version,
)
from sparkenv.report import Finding, GotchaId, Status


def judge_driver(
    driver: str | None,
    cuda: str | None,
    *,
    compat_libcuda: str | None = None,
    gpu_name: str | None = None,
    where: str = "the image",
) -> Finding:
    """G1: the host's kernel-module driver against the CUDA release `where` was built for.

    `compat_libcuda`: version of a forward-compatibility libcuda (cuda-compat, /usr/local/cuda/compat)
    present in the image; `gpu_name`: the GPU, to tell whether forward compatibility can load on it.
    """
    if not driver:
        return Finding(
            id=GotchaId.G1,
            status=Status.SKIP,
            summary="no NVIDIA driver found: nothing to compare the CUDA release with",
            subject=SUBJECT,
        )
    if not cuda:
        return Finding(
            id=GotchaId.G1,
            status=Status.INFO,
            summary=f"driver {driver}; CUDA release of {where} unknown",
            subject=SUBJECT,
        )
    req = requirement(cuda)
    if req is None:
        return Finding(
            id=GotchaId.G1,
            status=Status.WARN,
            summary=f"driver {driver}; CUDA {cuda} of {where} is not in sparkenv's driver table "
            f"(data/drivers.toml, reviewed {reviewed()})",
            subject=SUBJECT,
            evidence=(f"CUDA {cuda}",),
            fix="check NVIDIA's CUDA toolkit release notes for its minimum driver",
        )
    have = version(driver)
    need = req.minimum
    source = datafiles.load("drivers")["source"]
    stale = (
        ""
        if req.known
        else f"; CUDA {req.release} is newer than the table (reviewed {reviewed()}): judged by the newest "
        f"{cuda.split('.')[0]}.x release in it"
    )
    evidence = (f"kernel module {driver}", f"CUDA {req.release} needs >= {need} ({source})")
    if have >= version(need):
        return Finding(
            id=GotchaId.G1,
            status=Status.PASS if req.known else Status.WARN,
            summary=f"driver {driver} runs CUDA {req.release} of {where} (needs >= {need}){stale}",
            subject=SUBJECT,
            evidence=evidence,
            fix=None
            if req.known
            else "refresh sparkenv/data/drivers.toml from NVIDIA's table (" + source + ")",
        )
    fit = newest_supported(have)
    upgrade = (
        f"update the host driver to >= {need} (DGX OS: sudo apt update && sudo apt full-upgrade, then reboot)"
        + (f", or use an image built for CUDA <= {fit}" if fit else "")
    )
    if compat_libcuda:
        unsupported = datafiles.load("drivers")["forward_compat"].get("unsupported_gpus", [])
        on_unsupported = bool(gpu_name) and any(n.lower() in (gpu_name or "").lower() for n in unsupported)
        if version(compat_libcuda) >= version(need) and not on_unsupported:
            return Finding(
                id=GotchaId.G1,
                status=Status.WARN,
                summary=f"driver {driver} is older than CUDA {req.release} needs (>= {need}); {where} runs "
                f"only through its forward-compatibility libcuda {compat_libcuda}, which loads on "
                "data-center GPUs only (cuInit error 804 elsewhere; NGC prints 'compatibility mode is "
                "UNAVAILABLE')",
                subject=SUBJECT,
                evidence=(*evidence, f"forward-compatibility libcuda {compat_libcuda}"),
                fix=upgrade,
            )
        if on_unsupported:
            evidence = (
                *evidence,
                f"forward-compatibility libcuda {compat_libcuda}: not supported on {gpu_name}",
            )
    if req.floor is not None and have >= req.floor:
        return Finding(
            id=GotchaId.G1,
            status=Status.WARN,
            summary=f"driver {driver} is older than CUDA {req.release} of {where} needs (>= {need}): it runs "
            "only under CUDA minor version compatibility — PTX from this toolkit cannot be JIT-compiled "
            "(CUDA_ERROR_UNSUPPORTED_PTX_VERSION) and newer APIs fail with cudaErrorCallRequiresNewerDriver; "
            f"NGC's entrypoint reports 'built for NVIDIA Driver Release {show(version(need)[:2])} or later'",
            subject=SUBJECT,
            evidence=evidence,
            fix=upgrade,
        )
    return Finding(
        id=GotchaId.G1,
        status=Status.FAIL,
        summary=f"driver {driver} cannot run CUDA {req.release} of {where}: it needs >= {need}"
        + (
            f" (CUDA {cuda.split('.')[0]}.x needs at least {show(req.floor)} even under minor version "
            "compatibility)"
            if req.floor
            else ""
        )
        + stale,
        subject=SUBJECT,
        evidence=evidence,
        fix=upgrade,
    )


def judge_libcuda(kernel_module: str | None, libraries: Iterable[str]) -> Finding | None:
    """G1: a user-space libcuda.so.<version> that is not the loaded kernel module's version fails every
    CUDA call with 'Driver/library version mismatch'. Forward-compatibility copies (data/drivers.toml
    `forward_compat.dirs`) differ on purpose and are left to `judge_driver`. None when nothing to say."""
    if not kernel_module:
        return None
    compat_dirs = tuple(datafiles.load("drivers")["forward_compat"]["dirs"])
    mismatched = []
    for path in libraries:
        v = libcuda_version(path)
        if v is None or path.rsplit("/", 1)[0] in compat_dirs:
            continue
        if version(v) != version(kernel_module):
            mismatched.append((path, v))
    if not mismatched:
        return None
    path, v = mismatched[0]
    newer = version(v) > version(kernel_module)
    fix = (
        "reboot the host: the driver was upgraded but the old kernel module is still loaded"
        if newer
        else "remove the libcuda the image ships (a driver package installed in the image) so the NVIDIA "
        "container runtime mounts the host's, or reboot the host if its driver was just downgraded"
    )
    return Finding(
        id=GotchaId.G1,
        status=Status.FAIL,
        summary=f"user-space {path.rsplit('/', 1)[-1]} is not the loaded kernel module {kernel_module}: "
        "every CUDA call fails with 'Driver/library version mismatch'",
        subject="libcuda",
        evidence=tuple(f"{p}: {ver}" for p, ver in mismatched),
        fix=fix,
    )

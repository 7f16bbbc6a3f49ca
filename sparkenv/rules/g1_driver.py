"""G1: the host driver against a CUDA release (the gate's live rule, and `sparkenv build --driver`); the
versions and the dated table are sparkenv/cuda/driver.py's."""

from __future__ import annotations

from functools import partial

from sparkenv.core.report import Finding, GotchaId, Status
from sparkenv.cuda import driver as drv
from sparkenv.knowledge import drivers

_finding = partial(Finding, GotchaId.G1, subject=drv.SUBJECT)  # every finding here: G1, about the driver


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
        return _finding(
            status=Status.SKIP,
            summary="no NVIDIA driver found: nothing to compare the CUDA release with",
        )
    if not cuda:
        return _finding(
            status=Status.INFO,
            summary=f"driver {driver}; CUDA release of {where} unknown",
        )
    req = drv.requirement(cuda)
    if req is None:
        return _finding(
            status=Status.WARN,
            summary=f"driver {driver}; CUDA {cuda} of {where} is not in sparkenv's driver table "
            f"(data/drivers.toml, reviewed {drv.reviewed()})",
            evidence=(f"CUDA {cuda}",),
            fix="check NVIDIA's CUDA toolkit release notes for its minimum driver",
        )
    source = drivers().source
    stale = (
        ""
        if req.known
        else f"; CUDA {req.release} is newer than the table (reviewed {drv.reviewed()}): judged by the "
        f"newest {cuda.split('.')[0]}.x release in it"
    )
    evidence = (f"kernel module {driver}", f"CUDA {req.release} needs >= {req.minimum} ({source})")
    if drv.version(driver) >= drv.version(req.minimum):
        return _finding(
            status=Status.PASS if req.known else Status.WARN,
            summary=f"driver {driver} runs CUDA {req.release} of {where} (needs >= {req.minimum}){stale}",
            evidence=evidence,
            fix=None
            if req.known
            else "refresh sparkenv/data/drivers.toml from NVIDIA's table (" + source + ")",
        )
    return _too_old(driver, cuda, req, where, evidence, stale, compat_libcuda, gpu_name)


def _too_old(
    driver: str,
    cuda: str,
    req: drv.Requirement,
    where: str,
    evidence: tuple[str, ...],
    stale: str,
    compat_libcuda: str | None,
    gpu_name: str | None,
) -> Finding:
    """The driver is below the release's minimum: forward compatibility, minor version compatibility, or
    it cannot run at all."""
    have = drv.version(driver)
    need = req.minimum
    fit = drv.newest_supported(have)
    upgrade = (
        f"update the host driver to >= {need} (DGX OS: sudo apt update && sudo apt full-upgrade, then reboot)"
        + (f", or use an image built for CUDA <= {fit}" if fit else "")
    )
    if compat_libcuda:
        unsupported = drivers().forward_compat.unsupported_gpus
        on_unsupported = bool(gpu_name) and any(n.lower() in (gpu_name or "").lower() for n in unsupported)
        if drv.version(compat_libcuda) >= drv.version(need) and not on_unsupported:
            return _finding(
                status=Status.WARN,
                summary=f"driver {driver} is older than CUDA {req.release} needs (>= {need}); {where} runs "
                f"only through its forward-compatibility libcuda {compat_libcuda}, which loads on "
                "data-center GPUs only (cuInit error 804 elsewhere; NGC prints 'compatibility mode is "
                "UNAVAILABLE')",
                evidence=(*evidence, f"forward-compatibility libcuda {compat_libcuda}"),
                fix=upgrade,
            )
        if on_unsupported:
            evidence = (
                *evidence,
                f"forward-compatibility libcuda {compat_libcuda}: not supported on {gpu_name}",
            )
    if req.floor is not None and have >= req.floor:
        return _finding(
            status=Status.WARN,
            summary=f"driver {driver} is older than CUDA {req.release} of {where} needs (>= {need}): it runs "
            "only under CUDA minor version compatibility — PTX from this toolkit cannot be JIT-compiled "
            "(CUDA_ERROR_UNSUPPORTED_PTX_VERSION) and newer APIs fail with cudaErrorCallRequiresNewerDriver; "
            f"NGC's entrypoint reports 'built for NVIDIA Driver Release {drv.show(drv.version(need)[:2])} or "
            "later'",
            evidence=evidence,
            fix=upgrade,
        )
    return _finding(
        status=Status.FAIL,
        summary=f"driver {driver} cannot run CUDA {req.release} of {where}: it needs >= {need}"
        + (
            f" (CUDA {cuda.split('.')[0]}.x needs at least {drv.show(req.floor)} even under minor version "
            "compatibility)"
            if req.floor
            else ""
        )
        + stale,
        evidence=evidence,
        fix=upgrade,
    )


def driver_for_image(driver: str, cuda: str | None, where: str) -> Finding:
    """`sparkenv build --driver` (or the build machine's own driver): the profile's CUDA against the driver
    the image will meet. Too old is a WARN at build time, not a FAIL: the image is built here but may run on
    a host with a newer driver; the gate on that host makes the same judgement a FAIL (`judge_driver`)."""
    found = judge_driver(driver, cuda, where=where)
    if found.status is Status.FAIL:
        from dataclasses import replace

        found = replace(found, status=Status.WARN)
    return found

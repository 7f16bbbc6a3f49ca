"""G1: the host driver against a CUDA release (the gate's live rule, and `sparkenv build --driver`); the
versions and the dated table are sparkenv/cuda/driver.py's."""

from __future__ import annotations

import enum
from dataclasses import replace
from functools import partial

from sparkenv.core.report import Finding, GotchaId, Status
from sparkenv.cuda import driver as drv
from sparkenv.knowledge import drivers
from sparkenv.knowledge.known import Unknown, newer_than_known

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
    unknown = newer_than_known("cuda", cuda)
    if req is None and unknown:  # a CUDA major past the table: nothing in it says what that needs
        below = drv.version(driver) < drv.version(drivers().toolkit[unknown.newest])
        return _finding(
            status=Status.WARN if below else Status.INFO,  # below even the newest known release's minimum
            summary=f"driver {driver}; {where}: {unknown.summary()}",
            evidence=(f"CUDA {cuda}",),
            fix=unknown.refresh,
        )
    if req is None:
        return _finding(
            status=Status.WARN,
            summary=f"driver {driver}; CUDA {cuda} of {where} is not in sparkenv's driver table "
            f"(data/drivers.toml, reviewed {drv.reviewed()})",
            evidence=(f"CUDA {cuda}",),
            fix="check NVIDIA's CUDA toolkit release notes for its minimum driver",
        )
    source = drivers().source
    stale = _stale(cuda, req, unknown)
    evidence = (f"kernel module {driver}", f"CUDA {req.release} needs >= {req.minimum} ({source})")
    if req.row in drivers().unverified:
        evidence += (
            f"UNVERIFIED: {req.minimum} is the driver branch NVIDIA's notes name for CUDA {req.row}, not its "
            "exact minimum",
        )
    if drv.version(driver) >= drv.version(req.minimum):
        if unknown:
            return _finding(
                status=Status.INFO,
                summary=f"driver {driver} runs every CUDA release up to {unknown.newest} ({req.row} needs >= "
                f"{req.minimum}); {where}: {unknown.summary()}",
                evidence=evidence,
                fix=unknown.refresh,
            )
        return _finding(
            status=Status.PASS if req.known else Status.WARN,
            summary=f"driver {driver} runs CUDA {req.release} of {where} (needs >= {req.minimum}){stale}",
            evidence=evidence,
            fix=None
            if req.known
            else "refresh sparkenv/data/drivers.toml from NVIDIA's table (" + source + ")",
        )
    return _too_old(driver, cuda, req, where, evidence, stale, compat_libcuda, gpu_name)


def _stale(cuda: str, req: drv.Requirement, unknown: Unknown | None) -> str:
    """What the judgement rests on when the release has no row of its own: never silent."""
    if unknown:
        return f"; {unknown.summary()}, so it is judged by the newest {unknown.newest} ({unknown.refresh})"
    if req.known:
        return ""
    return (
        f"; CUDA {req.release} has no row in the table (reviewed {drv.reviewed()}): judged by the nearest "
        f"older release, {req.row}"
    )


class Mode(str, enum.Enum):
    """How a CUDA release runs on a driver, by CUDA's compatibility rules (the data's [minor_compat] and
    [forward_compat]); the value is what the finding says."""

    NATIVE = "the driver's own support (at or above the release's minimum)"
    FORWARD = "CUDA forward compatibility (the image's cuda-compat libcuda stands in for the driver's)"
    MINOR = "CUDA minor-version compatibility (the major's floor, below the release's minimum)"
    NONE = "no compatibility mode (below the major's floor)"


def compat_mode(
    driver: str, req: drv.Requirement, compat_libcuda: str | None = None, gpu_name: str | None = None
) -> Mode:
    """The mode a CUDA release (its requirement) runs in on `driver`: the one decision the driver finding
    states. Forward compatibility applies only where the image carries a cuda-compat libcuda new enough and
    the GPU loads it (not on GB10: data/drivers.toml [forward_compat]); a banner that says otherwise on a
    GB10 is minor-version compatibility at work."""
    have = drv.version(driver)
    if have >= drv.version(req.minimum):
        return Mode.NATIVE
    if (
        compat_libcuda
        and drv.version(compat_libcuda) >= drv.version(req.minimum)
        and not forward_unsupported(gpu_name)
    ):
        return Mode.FORWARD
    if req.floor is not None and have >= req.floor:
        return Mode.MINOR
    return Mode.NONE


def forward_unsupported(gpu_name: str | None) -> bool:
    unsupported = drivers().forward_compat.unsupported_gpus
    return bool(gpu_name) and any(n.lower() in (gpu_name or "").lower() for n in unsupported)


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
    it cannot run at all (compat_mode decides which)."""
    have = drv.version(driver)
    need = req.minimum
    fit = drv.newest_supported(have)
    upgrade = (
        f"update the host driver to >= {need} (DGX OS: sudo apt update && sudo apt full-upgrade, then reboot)"
        + (f", or use an image built for CUDA <= {fit}" if fit else "")
    )
    mode = compat_mode(driver, req, compat_libcuda, gpu_name)
    if compat_libcuda:
        evidence = (
            *evidence,
            f"forward-compatibility libcuda {compat_libcuda}"
            + (f": not supported on {gpu_name}" if forward_unsupported(gpu_name) else ""),
        )
    if mode is Mode.FORWARD:
        return _finding(
            status=Status.WARN,
            summary=f"driver {driver} is older than CUDA {req.release} needs (>= {need}); {where} runs "
            f"only through its forward-compatibility libcuda {compat_libcuda}, which loads on "
            "data-center GPUs only (cuInit error 804 elsewhere; NGC prints 'compatibility mode is "
            f"UNAVAILABLE'){stale}",
            evidence=evidence,
            fix=upgrade,
        )
    if mode is Mode.MINOR:
        not_forward = (
            f" — not forward compatibility: the image's cuda-compat libcuda {compat_libcuda} does not "
            f"load on "
            f"{gpu_name}, whatever the container's banner says"
            if compat_libcuda and forward_unsupported(gpu_name)
            else ""
        )
        return _finding(
            status=Status.WARN,
            summary=f"driver {driver} is older than CUDA {req.release} of {where} needs (>= {need}): it runs "
            f"only under CUDA minor version compatibility{not_forward} — PTX from this toolkit cannot be "
            "JIT-compiled (CUDA_ERROR_UNSUPPORTED_PTX_VERSION) and newer APIs fail with "
            "cudaErrorCallRequiresNewerDriver; NGC's entrypoint reports 'built for NVIDIA Driver Release "
            f"{drv.show(drv.version(need)[:2])} or later'{stale}",
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
        found = replace(found, status=Status.WARN)
    return found

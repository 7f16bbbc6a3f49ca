"""Can this host driver run that CUDA release? (G1, before any torch import.)

Pure: the caller reads `/proc/driver/nvidia/version` (or NVML), `CUDA_VERSION` / the environment's
cudart and the `libcuda.so.<version>` files it sees; this module parses those texts and judges them
against the dated table in data/drivers.toml (NVIDIA's CUDA toolkit release notes). The gate, `build`
(`--driver`) and anything else that needs the decision call `judge_driver` / `judge_libcuda`.
"""

from __future__ import annotations

import functools
import re
from collections.abc import Iterable
from dataclasses import dataclass

from sparkenv.knowledge import drivers
from sparkenv.report import Finding, GotchaId, Status

Version = tuple[int, ...]
_PROC = re.compile(r"Kernel Module(?:\s+for\s+\S+)?\s+(\d+\.\d+(?:\.\d+)?)\b")
_ANY_DRIVER = re.compile(r"\b(\d{3}\.\d{2,3}(?:\.\d{2})?)\b")
_LIBCUDA = re.compile(r"libcuda\.so\.(\d{3}\.\d+(?:\.\d+)?)$")
_CUDA = re.compile(r"^\s*v?(\d{1,2})\.(\d{1,2})(?:\.(\d{1,3}))?")
SUBJECT = "driver"


def version(text: str) -> Version:
    return tuple(int(p) for p in text.split("."))


def show(v: Version) -> str:
    return ".".join(str(p) for p in v)


def parse_proc_version(text: str) -> str | None:
    """The kernel module's version from /proc/driver/nvidia/version:
    'NVRM version: NVIDIA UNIX Open Kernel Module for aarch64  580.95.05  Release Build …' -> '580.95.05'."""
    first = text.strip().splitlines()[0] if text.strip() else ""
    m = _PROC.search(first) or _ANY_DRIVER.search(first)
    return m.group(1) if m else None


def libcuda_version(path: str) -> str | None:
    """'/usr/lib/aarch64-linux-gnu/libcuda.so.580.95.05' -> '580.95.05'; None for libcuda.so.1 etc."""
    m = _LIBCUDA.search(path)
    return m.group(1) if m else None


def cuda_release(text: str) -> tuple[int, int, int | None] | None:
    """CUDA_VERSION '13.0.2.006' -> (13, 0, 2); '13.1' -> (13, 1, None); torch.version.cuda '13.0'."""
    m = _CUDA.match(text or "")
    if not m:
        return None
    return int(m.group(1)), int(m.group(2)), int(m.group(3)) if m.group(3) is not None else None


@functools.cache
def _table() -> dict[tuple[int, int, int], str]:
    rows = drivers().toolkit
    return {tuple(int(p) for p in k.split(".")): v for k, v in rows.items()}  # type: ignore[misc]


def reviewed() -> str:
    return drivers().reviewed


@dataclass(frozen=True)
class Requirement:
    release: str  # the CUDA release as judged ("13.0.2", "13.0 (GA; update unknown)")
    minimum: str  # the toolkit's minimum driver, as NVIDIA writes it
    floor: Version | None  # the major's minor-version-compatibility floor
    known: bool  # False: the release is newer than the table; minimum is the newest of its major


def requirement(cuda: str) -> Requirement | None:
    """The driver a CUDA release needs, per NVIDIA's table; None when `cuda` is not a CUDA version or
    its major is unknown to the table."""
    rel = cuda_release(cuda)
    if rel is None:
        return None
    major, minor, update = rel
    table = _table()
    floor_text = drivers().minor_compat.get(str(major))
    floor = version(floor_text) if floor_text else None
    same_major = sorted(k for k in table if k[0] == major)
    if not same_major:
        return None
    if update is None:  # the update is unknown: the GA is the lowest bar of that minor
        key = next((k for k in same_major if k[:2] == (major, minor)), None)
        if key is not None:
            return Requirement(f"{major}.{minor} (GA; update unknown)", table[key], floor, True)
    elif (major, minor, update) in table:
        return Requirement(f"{major}.{minor}.{update}", table[(major, minor, update)], floor, True)
    older = [k for k in same_major if k <= (major, minor, update or 0)]
    if not older:
        return None
    shown = f"{major}.{minor}" + (f".{update}" if update is not None else "")
    return Requirement(shown, table[older[-1]], floor, False)


def newest_supported(driver: Version) -> str | None:
    """The newest CUDA release this driver runs in full (for the fix text)."""
    ok = [k for k, v in _table().items() if version(v) <= driver]
    return show(max(ok)) if ok else None


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
    source = drivers().source
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
        unsupported = drivers().forward_compat.unsupported_gpus
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
    compat_dirs = drivers().forward_compat.dirs
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

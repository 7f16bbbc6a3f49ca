"""What an image is built for: the GPU its extensions must run on (G7) and the driver it will meet (G1)."""

from __future__ import annotations

from dataclasses import replace
from typing import TYPE_CHECKING

from sparkenv.core.errors import SparkenvError
from sparkenv.cuda import coverage
from sparkenv.cuda import driver as drv
from sparkenv.environment import host_driver
from sparkenv.rules.g1_driver import driver_for_image

if TYPE_CHECKING:
    from sparkenv.core.report import Finding


def target_gpu(gpu: str | None, prof) -> str:  # type: ignore[no-untyped-def]
    """--gpu, else the profile's `gpu`, else the GB10: what the image's extensions must run on (G7)."""

    value = (gpu or str(getattr(prof, "gpu", "") or "") or coverage.cap_text(coverage.gb10())).strip()
    cap = coverage.parse_gpu_option(value)
    return "none" if cap is None else coverage.cap_text(cap)


def driver_check(driver: str | None, prof) -> Finding | None:  # type: ignore[no-untyped-def]
    """G1 at build time: the profile's CUDA against --driver, or against this machine's driver when it
    has one (building on the Spark); rules/g1.driver_for_image judges it (a WARN: the image may run
    elsewhere). A finding of the build's report (the dry run prints it first)."""

    where = "--driver"
    if driver is None:
        driver = host_driver.version()
        if driver is None:
            return None
        where = "this machine's driver"
    elif drv.parse_proc_version(f"Kernel Module {driver}") != driver.strip():
        raise SparkenvError(f"--driver {driver!r}: not a driver version like 580.95.05")
    cuda = getattr(prof, "cuda", None) or None
    found = driver_for_image(driver.strip(), cuda, where=f"profile {prof.name}")
    return replace(found, evidence=(*found.evidence, f"the driver is {where}'s"))

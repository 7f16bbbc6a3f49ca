"""What an image is built for: the GPU its extensions must run on (G7) and the driver it will meet (G1)."""

from __future__ import annotations


def target_gpu(gpu: str | None, prof) -> str:  # type: ignore[no-untyped-def]
    """--gpu, else the profile's `gpu`, else the GB10: what the image's extensions must run on (G7)."""
    from sparkenv.cuda import coverage
    from sparkenv.errors import SparkenvError

    value = (gpu or str(getattr(prof, "gpu", "") or "") or coverage.cap_text(coverage.gb10())).strip()
    if value.lower() == "none":
        return "none"
    cap = coverage.parse_capability(value)
    if cap is None:
        raise SparkenvError(f"--gpu {value!r}: not a GPU capability (like 12.1 or 9.0) or 'none'")
    return coverage.cap_text(cap)


def driver_check(driver: str | None, prof) -> str | None:  # type: ignore[no-untyped-def]
    """G1 at build time: the profile's CUDA against --driver, or against this machine's driver when it
    has one (building on the Spark); rules/g1.driver_for_image judges it (a WARN: the image may run
    elsewhere)."""
    from sparkenv.cuda import driver as drv
    from sparkenv.errors import SparkenvError
    from sparkenv.report import Status

    where = "--driver"
    if driver is None:
        try:
            with open("/proc/driver/nvidia/version", encoding="utf-8", errors="replace") as fh:
                driver = drv.parse_proc_version(fh.read(4096))
            where = "this machine's driver"
        except OSError:
            return None
        if driver is None:
            return None
    elif drv.parse_proc_version(f"Kernel Module {driver}") != driver.strip():
        raise SparkenvError(f"--driver {driver!r}: not a driver version like 580.95.05")
    cuda = getattr(prof, "cuda", None) or None
    from sparkenv.rules.g1 import driver_for_image

    found = driver_for_image(driver.strip(), cuda, where=f"profile {prof.name}")
    text = f"{found.id} {found.status.value}: {found.summary} ({where})"
    return text + (f"; fix: {found.fix}" if found.fix and found.status is not Status.PASS else "")

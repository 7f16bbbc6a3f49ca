"""The host's NVIDIA driver version, read from the loaded kernel module: one reader for the gate's probe,
the multi-node digest and `sparkenv build` on the Spark itself. It is there even where libnvidia-ml is
not mounted into a container; the version is parsed by sparkenv/cuda/driver.py."""

from __future__ import annotations

from typing import Any

from sparkenv.core.safe_read import UnreadableFile, read_text
from sparkenv.cuda.driver import parse_proc_version

PROC_DRIVER = "/proc/driver/nvidia/version"
# The bare version, where /proc/driver/nvidia is hidden (some container runtimes)
SYS_MODULE = "/sys/module/nvidia/version"
# The kernel's taint flags of the loaded module: 'P' for a proprietary license (cuda/driver.module_flavour)
SYS_TAINT = "/sys/module/nvidia/taint"


def read() -> dict[str, Any]:
    """{"proc_version", "version", "source"}, or {"proc_version": None, "version": None, "error": why}
    (the gate records it as it is, so the snapshot says why the driver is unknown)."""

    try:
        text = read_text(PROC_DRIVER, what="the NVIDIA driver version", limit=64 << 10, errors="replace")
    except UnreadableFile as exc:
        try:
            bare = read_text(SYS_MODULE, what="the NVIDIA driver version", limit=4096, errors="replace")
        except UnreadableFile:
            return {"proc_version": None, "version": None, "error": exc.reason}
        return {"proc_version": None, "version": parse_proc_version(bare), "source": SYS_MODULE}
    return {"proc_version": text.strip()[:500], "version": parse_proc_version(text), "source": PROC_DRIVER}


def version() -> str | None:
    """The kernel module's version, or None where no NVIDIA driver is loaded (or it cannot be read)."""
    return read()["version"]


def taint() -> str | None:
    """The loaded nvidia module's taint flags ("POE", "OE"), or None where no module is loaded."""

    try:
        return read_text(SYS_TAINT, what="the NVIDIA module's taint flags", limit=4096).strip()
    except UnreadableFile:
        return None

"""A read-only view of a host snapshot (`sparkenv host`, live or replayed): the gate's view (the driver,
/proc/meminfo and NVML sections are the gate's own) with the questions only the host checks ask, about
the `host_setup` section. A gate snapshot replays here too: what it lacks is said by the checks."""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any

from sparkenv.cuda.driver import module_flavour
from sparkenv.facts.live import GateFacts

# What the firmware or DGX OS calls a Spark ("NVIDIA_DGX_Spark" in /sys/class/dmi/id/product_name)
SPARK_WORDS = ("DGX_Spark", "DGX Spark")
_VERSION = re.compile(r"\b\d+\.\d+(?:\.\d+)*\b")


@dataclass(frozen=True)
class HostFacts(GateFacts):
    @property
    def setup(self) -> dict[str, Any]:
        return self.section("host_setup") or {}

    def part(self, name: str) -> dict[str, Any] | None:
        """One host_setup part, or None where it was not read (an older snapshot, a failed probe)."""
        value = self.setup.get(name)
        return value if isinstance(value, dict) else None

    @property
    def has_setup(self) -> bool:
        return "host_setup" in self.raw

    # --- the machine ------------------------------------------------------------------------------
    @property
    def kernel(self) -> str | None:
        return (self.raw.get("host") or {}).get("kernel")

    @property
    def platform_info(self) -> dict[str, Any]:
        return self.part("platform") or {}

    @property
    def dgx_release(self) -> dict[str, str]:
        return self.platform_info.get("dgx_release") or {}

    @property
    def dgx_os(self) -> str | None:
        """The installed DGX OS release: the over-the-air version where it names one (the build version
        is the image the machine was installed from and stays put through updates)."""
        rel = self.dgx_release
        ota = rel.get("DGX_OTA_VERSION") or ""
        if _VERSION.search(ota):
            return ota
        return rel.get("DGX_SWBUILD_VERSION") or ota or rel.get("DGX_PRETTY_NAME")

    @property
    def dgx_os_version(self) -> str | None:
        """The release as a version ("7.6.0"), or None where /etc/dgx-release names none."""
        m = _VERSION.search(self.dgx_os or "")
        return m.group(0) if m else None

    @property
    def os_name(self) -> str | None:
        return (self.platform_info.get("os_release") or {}).get("PRETTY_NAME")

    @property
    def is_spark(self) -> bool:
        """A DGX Spark: NVML sees a GB10, or the firmware or /etc/dgx-release says so (where the GPU is not
        found, NVML cannot)."""
        if self.is_gb10:
            return True
        said = [self.platform_info.get("product_name") or "", *self.dgx_release.values()]
        return any(w in s for s in said for w in SPARK_WORDS)

    # --- the driver --------------------------------------------------------------------------------
    @property
    def module_flavour(self) -> str | None:

        drv = self.section("driver") or {}
        return module_flavour(drv.get("proc_version"), drv.get("taint"))

    @property
    def driver_missing_why(self) -> str:
        drv = self.section("driver") or {}
        if drv.get("error"):
            return f"/proc/driver/nvidia/version: {drv['error']}"
        return str(self.probe_error("driver") or "no driver section in the snapshot")

    @property
    def nvml_error(self) -> str | None:
        gpu = self.gpu_readings
        if gpu.get("gpus"):
            return None
        return str(gpu.get("error") or self.probe_error(self.gpu_probe) or "NVML listed no GPU")

    # --- docker ------------------------------------------------------------------------------------
    @property
    def engine(self) -> dict[str, Any]:
        return self.part("docker") or {}

    @property
    def socket(self) -> dict[str, Any]:
        return self.part("socket") or {}

    @property
    def docker_absent(self) -> bool:
        """No engine here at all: no socket, and nothing answered."""
        return self.socket.get("exists") is False and not self.engine.get("answered")

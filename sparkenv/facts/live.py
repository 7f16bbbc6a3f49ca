"""A read-only view of a facts snapshot (live or replayed) with the questions every check asks."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from sparkenv.core.report import Finding, GotchaId, Status
from sparkenv.cuda.driver import parse_proc_version
from sparkenv.knowledge import gate


@dataclass(frozen=True)
class GateFacts:
    raw: dict[str, Any]
    need_gb: float = 0.0
    strict: bool = False  # --policy strict: a workload that cannot run is stopped, so it is a FAIL

    def section(self, name: str) -> dict[str, Any] | None:
        """The probe's result, or None when the probe failed (see probe_error)."""
        value = self.raw.get(name)
        return value if isinstance(value, dict) else None

    def probe_error(self, name: str) -> str | None:
        return (self.raw.get("probe_errors") or {}).get(name)

    def error_finding(self, gid: GotchaId, probe: str, subject: str) -> Finding | None:
        """The ERROR line for a check whose probe did not deliver; None when it did."""
        err = self.probe_error(probe)
        if err is None and self.section(probe) is not None:
            return None
        return Finding(
            id=gid,
            status=Status.ERROR,
            summary=f"{probe} probe failed: {err or 'no data in the snapshot'}",
            subject=subject,
        )

    # --- torch -----------------------------------------------------------------------------------
    @property
    def torch_stages(self) -> dict[str, Any]:
        t = self.section("torch") or {}
        return t.get("stages") or {}

    @property
    def torch(self) -> dict[str, Any] | None:
        return self.torch_stages.get("imported")

    @property
    def device(self) -> dict[str, Any] | None:
        return self.torch_stages.get("first_op")

    # --- GPU identity ----------------------------------------------------------------------------
    @property
    def gpu_probe(self) -> str:
        """The section holding the GPU readings: "gpu" (NVML), or "smi" in snapshots taken before NVML."""
        if "gpu" in self.raw or "gpu" in (self.raw.get("probe_errors") or {}):
            return "gpu"
        return "smi"

    @property
    def gpu_readings(self) -> dict[str, Any]:
        return self.section(self.gpu_probe) or {}

    @property
    def gpu0(self) -> dict[str, Any] | None:
        gpus = self.gpu_readings.get("gpus") or []
        return gpus[0] if gpus else None

    @property
    def deep(self) -> bool:
        """Whether the isolated torch probe ran (--deep), as in every snapshot taken before static mode."""
        return self.raw.get("mode") != "static"

    @property
    def driver_version(self) -> str | None:

        drv = self.section("driver") or {}
        if drv.get("version"):
            return str(drv["version"])
        if drv.get("proc_version"):
            found = parse_proc_version(str(drv["proc_version"]))
            if found:
                return found
        value = self.gpu_readings.get("driver_version") or (self.gpu0 or {}).get("driver_version")
        return str(value) if value else None

    @property
    def compat_libcuda(self) -> str | None:
        """The version of the forward-compatibility libcuda the gate found in the image (cuda-compat)."""
        value = (self.section("driver") or {}).get("compat_libcuda")
        return str(value) if value else None

    @property
    def capability(self) -> tuple[int, int] | None:
        if self.device and self.device.get("capability"):
            major, minor = self.device["capability"][:2]
            return int(major), int(minor)
        cap = (self.gpu0 or {}).get("compute_cap")
        if cap is not None:
            major, _, minor = str(cap).partition(".")
            if major.isdigit() and minor.isdigit():
                return int(major), int(minor)
        return None

    @property
    def gpu_name(self) -> str | None:
        return (self.device or {}).get("name") or (self.gpu0 or {}).get("name")

    @property
    def is_gb10(self) -> bool:
        spec = gate().gb10
        return self.capability == spec.capability or spec.name_contains in (self.gpu_name or "")

    @property
    def platform(self) -> str:
        if self.is_gb10:
            return "dgx-spark"
        if self.gpu_name or self.capability:
            return "generic-nvidia"
        return "no-gpu"

    # --- environment -----------------------------------------------------------------------------
    @property
    def env(self) -> dict[str, str]:
        return self.raw.get("env") or {}

    @property
    def dists(self) -> dict[str, str]:
        return self.section("dists") or {}

    @property
    def workload(self) -> list[str]:
        return list(self.raw.get("workload") or [])

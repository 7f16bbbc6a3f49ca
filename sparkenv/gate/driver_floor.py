"""Is this driver new enough for that CUDA major? One function, called by the gate's G1.

Interim interface: issue 12 brings the dated driver-per-CUDA table and its judgement to sparkenv/cuda;
once that is on main this module delegates to it and [driver_floor] leaves gate.toml.
"""

from __future__ import annotations

from dataclasses import dataclass

from packaging.version import InvalidVersion, Version

from sparkenv import datafiles


@dataclass(frozen=True)
class DriverVerdict:
    ok: bool | None  # None: no table entry or an unreadable version
    minimum: str | None
    source: str


def driver_supports(driver: str, cuda_major: int) -> DriverVerdict:
    table = datafiles.load("gate")["driver_floor"]
    minimum = table["minimum"].get(str(cuda_major))
    if minimum is None:
        return DriverVerdict(None, None, table["source"])
    try:
        return DriverVerdict(Version(driver) >= Version(minimum), minimum, table["source"])
    except InvalidVersion:
        return DriverVerdict(None, minimum, table["source"])

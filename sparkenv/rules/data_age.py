"""What sparkenv's data does not know, said once per stage as an INFO: a base (NGC release) or a driver newer
than the newest the dated data holds (knowledge/known.py decides that, for every stage), and a profile's
values that no public source confirmed (its `unverified` list).

The stages' rules call these and add the findings to their own: G9 for the base (check and lock through the
declared rule, audit, the gate), G1 for the driver (the gate; a CUDA release past the driver table is the
driver judgement's own text, rules/g1_driver.py, from the same decision).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from sparkenv.core.report import Finding, GotchaId, Status
from sparkenv.cuda.rules import ngc_release
from sparkenv.facts.ngc import RELEASE_VARIABLE
from sparkenv.knowledge.known import newer_than_known

if TYPE_CHECKING:
    from sparkenv.environment.profiles import Profile


def base(gid: GotchaId, release: str | None, where: str) -> list[Finding]:
    """An NGC release (YY.MM) newer than any the data knows: an INFO naming it and how to refresh."""
    unknown = newer_than_known("ngc", release)
    if unknown is None:
        return []
    return [
        Finding(
            id=gid,
            status=Status.INFO,
            summary=f"{where}: {unknown.summary()}",
            subject=f"NGC {unknown.value}",
            evidence=(f"NGC release {release}", f"newest known: {unknown.newest}"),
            fix=unknown.refresh,
        )
    ]


def driver(gid: GotchaId, version: str | None) -> list[Finding]:
    """A host driver of a branch newer than the driver table knows."""
    unknown = newer_than_known("driver", version)
    if unknown is None:
        return []
    return [
        Finding(
            id=gid,
            status=Status.INFO,
            summary=unknown.summary(),
            subject=f"driver table ({unknown.file})",
            evidence=(f"kernel module {version}", f"newest driver in the table: {unknown.newest}"),
            fix=unknown.refresh,
        )
    ]


def profile(gid: GotchaId, prof: Profile) -> list[Finding]:
    """The profile's UNVERIFIED values, and its NGC release when that is newer than the data knows."""

    out = base(gid, prof.env.get(RELEASE_VARIABLE) or ngc_release(prof.provides.get("torch", "")), prof.name)
    if prof.unverified:
        refresh = (
            f"sparkenv profiles new {prof.name} --from-image {prof.image} (on a machine that has it) reads "
            "them from the image"
            if prof.image
            else None
        )
        out.append(
            Finding(
                id=gid,
                status=Status.INFO,
                summary=f"profile {prof.name}: UNVERIFIED in sparkenv's data — {', '.join(prof.unverified)} "
                f"(no public source confirmed them; {prof.path} says where each value was read)",
                subject=f"profile {prof.name}",
                evidence=(f"source {prof.source}", f"reviewed {prof.reviewed}"),
                fix=refresh,
            )
        )
    return out

"""Known-bad host kernel builds, drivers and settings (data/hosts.toml), matched against what the gate
or `sparkenv host` read: the running kernel (`uname -r`), /proc/meminfo (as gate/parsers.parse_meminfo
reads it, kB), the driver and (host only) the kernel module's flavour and whether this is a Spark. Pure."""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING

from sparkenv.core.report import Finding
from sparkenv.cuda import driver as drv
from sparkenv.knowledge import hosts

if TYPE_CHECKING:
    from sparkenv.knowledge.records.hosts import HostIssue


def reviewed() -> str:
    return hosts().reviewed


def matching(
    kernel: str | None,
    meminfo: Mapping[str, int] | None,
    driver: str | None,
    cuda: str | None = None,
    module: str | None = None,
    spark: bool = False,
) -> list[HostIssue]:
    """The known issues that match. One about the module's flavour matches only where the flavour was
    read (`module`), a Spark-only one only where `spark`."""
    return [
        issue
        for issue in hosts().issues
        if _matches(issue, kernel, meminfo or {}, driver, cuda)
        and not (issue.module and issue.module != module)
        and not (issue.spark_only and not spark)
    ]


def judge(
    kernel: str | None,
    meminfo: Mapping[str, int] | None,
    driver: str | None,
    cuda: str | None = None,
    multi_node: bool = False,
    module: str | None = None,
    spark: bool = False,
) -> list[Finding]:
    """One finding per known issue that matches (see `matching`); nothing when none does."""
    out = []
    for issue in matching(kernel, meminfo, driver, cuda, module, spark):
        status = issue.multi_node_status if multi_node else issue.status
        seen = [f"kernel {kernel}" if issue.kernel else None, f"driver {driver}" if driver else None]
        seen += [f"{k}: {(meminfo or {}).get(k)} kB" for k in issue.meminfo]
        seen.append(f"{module} kernel module" if issue.module else None)
        out.append(
            Finding(
                id=issue.gotcha,
                status=status,
                summary=f"known host problem ({issue.id}, fixed in {issue.fixed}): {issue.problem}",
                subject=f"host:{issue.id}",
                evidence=(*(s for s in seen if s), issue.source),
                fix=issue.fix,
            )
        )
    return out


def _matches(
    issue: HostIssue, kernel: str | None, meminfo: Mapping[str, int], driver: str | None, cuda: str | None
) -> bool:
    if issue.kernel and issue.kernel != (kernel or ""):
        return False
    for key, value in issue.meminfo.items():
        if meminfo.get(key) != value:
            return False
    if issue.driver_below and (not driver or drv.version(driver) >= drv.version(issue.driver_below)):
        return False
    if issue.cuda_at_least:
        rel = drv.cuda_release(cuda or "")
        if rel is None or rel[:2] < tuple(int(p) for p in issue.cuda_at_least.split(".")[:2]):
            return False
    return True

"""data/hosts.toml: host kernel builds, drivers and settings reported broken on DGX Spark."""

from __future__ import annotations

import functools
from collections.abc import Mapping
from dataclasses import dataclass, field
from types import MappingProxyType

from sparkenv import datafiles
from sparkenv.knowledge.schema import build, key
from sparkenv.report import GotchaId, Status


@dataclass(frozen=True)
class HostIssue:
    id: str
    gotcha: GotchaId
    status: Status  # on one node
    multi_node_status: Status  # when the workload spans nodes
    problem: str
    fixed: str
    fix: str
    source: str
    kernel: str = ""  # exact `uname -r`; "" matches any kernel
    meminfo: Mapping[str, int] = field(
        default_factory=lambda: MappingProxyType({})
    )  # kB values /proc/meminfo must report
    driver_below: str | None = None
    cuda_at_least: str | None = None


@dataclass(frozen=True)
class Hosts:
    reviewed: str
    issues: tuple[HostIssue, ...] = key("issue", default=())


@functools.cache
def hosts() -> Hosts:
    return build(Hosts, datafiles.load("hosts"), "hosts")

"""data/hosts.toml: host kernel builds, drivers and settings reported broken on DGX Spark."""

from collections.abc import Mapping
from types import MappingProxyType
from typing import Any, NamedTuple

from sparkenv.core.report import GotchaId, Status
from sparkenv.knowledge.schema import build


class HostIssue(NamedTuple):
    id: str
    gotcha: GotchaId
    status: Status  # on one node
    multi_node_status: Status  # when the workload spans nodes
    problem: str
    fixed: str
    fix: str
    source: str
    kernel: str = ""  # exact `uname -r`; "" matches any kernel
    meminfo: Mapping[str, int] = MappingProxyType({})  # kB values /proc/meminfo must report
    driver_below: str | None = None
    cuda_at_least: str | None = None


class Hosts(NamedTuple):
    reviewed: str
    issues: tuple[HostIssue, ...] = ()
    _toml_keys = MappingProxyType({"issues": "issue"})  # field -> the TOML key it reads


def parse(data: dict[str, Any]) -> Hosts:
    """A parsed hosts.toml as Hosts, or one KnowledgeError naming the file and the key."""
    return build(Hosts, data, "hosts")

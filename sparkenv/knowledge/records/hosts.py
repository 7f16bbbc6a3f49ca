"""data/hosts.toml: host kernel builds, drivers and settings reported broken on DGX Spark, and what the
host checks (`sparkenv host`) print as fixes, with their sources."""

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
    module: str | None = None  # the NVIDIA kernel module's flavour: "open" or "proprietary"
    spark_only: bool = False  # only on a DGX Spark (GB10)


class HostChecks(NamedTuple):
    docker_group_fix: str
    docker_group_source: str
    docker_start_fix: str
    runtime_fix: str
    toolkit_source: str
    cdi_fix: str
    cdi_source: str
    image_free_gib: float
    cpu_load_fraction: float
    governor_fix: str
    cppc_fix: str
    cppc_source: str
    oom_fix: str
    oom_source: str


class DgxOsRelease(NamedTuple):
    version: str  # "7.6.0", as /etc/dgx-release names it
    date: str
    kernel: str  # `uname -r` of the kernel it ships
    driver: str  # the NVIDIA driver it ships
    source: str
    kernel_source: str = ""  # where the kernel is stated, when not in `source`
    unverified: tuple[str, ...] = ()  # fields no public page states ("kernel", "driver")


class Hosts(NamedTuple):
    reviewed: str
    checks: HostChecks
    issues: tuple[HostIssue, ...] = ()
    dgx_os: tuple[DgxOsRelease, ...] = ()
    _toml_keys = MappingProxyType({"issues": "issue"})  # field -> the TOML key it reads


def parse(data: dict[str, Any]) -> Hosts:
    """A parsed hosts.toml as Hosts, or one KnowledgeError naming the file and the key."""
    return build(Hosts, data, "hosts")

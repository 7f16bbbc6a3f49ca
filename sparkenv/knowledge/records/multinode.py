"""data/multinode.toml: more than one Spark (G10): the link, NCCL settings, what nodes agree on."""

from typing import Any, NamedTuple

from sparkenv.knowledge.schema import build


class Spark(NamedTuple):
    twins: tuple[tuple[str, ...], ...]  # the two RDMA devices of each QSFP port
    port_rate_gbps: int
    mtu: int


class Link(NamedTuple):
    min_rate_gbps: int
    slow_interface_prefixes: tuple[str, ...]


class Nccl(NamedTuple):
    settings: tuple[str, ...]
    conf_files: tuple[str, ...]


class Agreement(NamedTuple):
    fields: tuple[str, ...]
    nccl_settings: tuple[str, ...]
    port_offset: int
    default_master_port: int


class LinkTest(NamedTuple):
    buffer_mib: int
    max_iterations: int
    spark_busbw_gbs: float
    warn_below_fraction: float


class Parallelism(NamedTuple):
    spark_gpus: int
    nominal_busbw_gbs: float
    nominal_source: str
    two_spark_tp_source: str
    alternative_source: str


class Ray(NamedTuple):
    namespace: str
    key_prefix: str
    default_gcs_port: int


class Multinode(NamedTuple):
    reviewed: str
    spark: Spark
    link: Link
    nccl: Nccl
    agreement: Agreement
    link_test: LinkTest
    parallelism: Parallelism
    ray: Ray


def parse(data: dict[str, Any]) -> Multinode:
    """A parsed multinode.toml as Multinode, or one KnowledgeError naming the file and the key."""
    return build(Multinode, data, "multinode")

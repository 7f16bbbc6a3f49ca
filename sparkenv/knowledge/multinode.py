"""data/multinode.toml: more than one Spark (G10): the link, NCCL settings, what nodes agree on."""

from __future__ import annotations

import functools
from dataclasses import dataclass

from sparkenv import datafiles
from sparkenv.knowledge.schema import build


@dataclass(frozen=True)
class Spark:
    rdma_vendor_part: str
    twins: tuple[tuple[str, ...], ...]  # the two RDMA devices of each QSFP port
    port_rate_gbps: int
    mtu: int


@dataclass(frozen=True)
class Link:
    min_rate_gbps: int
    slow_interface_prefixes: tuple[str, ...]


@dataclass(frozen=True)
class Nccl:
    settings: tuple[str, ...]
    conf_files: tuple[str, ...]


@dataclass(frozen=True)
class Agreement:
    fields: tuple[str, ...]
    nccl_settings: tuple[str, ...]
    port_offset: int
    default_master_port: int


@dataclass(frozen=True)
class LinkTest:
    buffer_mib: int
    max_iterations: int
    spark_busbw_gbs: float
    warn_below_fraction: float


@dataclass(frozen=True)
class Multinode:
    reviewed: str
    spark: Spark
    link: Link
    nccl: Nccl
    agreement: Agreement
    link_test: LinkTest


@functools.cache
def multinode() -> Multinode:
    return build(Multinode, datafiles.load("multinode"), "multinode")

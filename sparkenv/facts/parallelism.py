"""What the G10 parallelism rule reads: the sizes a launch asks for, the GPUs and nodes it has, and what
the link carries. Built by rules/g10.py from the gate's snapshot (launch, NVML, the Ray agent's answer)."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Parallelism:
    tp: int
    pp: int
    nodes: int  # what the launch names (--nnodes, …), or the Ray cluster's node count when larger
    local_gpus: int | None  # NVML's count on this node; None when NVML gave none
    serving: bool  # an inference server, not a trainer
    ray: bool = False  # the launcher places ranks through a Ray cluster (it spans as many nodes as needed)
    spark: bool = False  # this node is a DGX Spark (one GPU), for when NVML gave no count
    link_gbs: float | None = None  # measured by --link-test (bus bandwidth, GB/s), else the nominal figure
    evidence: tuple[str, ...] = ()  # where each number came from ("workload --tensor-parallel-size 2")
    flags: tuple[str, str] = ("--tensor-parallel-size", "--pipeline-parallel-size")  # the launcher's spelling

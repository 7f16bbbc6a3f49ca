"""G10: tensor and pipeline parallelism against the GPUs a node has. One judgement for every launcher
(torchrun, accelerate, DeepSpeed, vLLM, SGLang, TensorRT-LLM, Ray): "crosses the link" when TP × PP is
more than this node's GPUs. Training with TP across nodes is a FAIL (its all-reduces are too fine-grained
for the link); serving with TP across Sparks is what NVIDIA's two-Spark playbook does, so a WARN naming
the link's bandwidth and the alternative (PP across nodes, TP within). Pure: plain facts in, one finding
out (facts/parallelism.py); the sources are in data/multinode.toml."""

from __future__ import annotations

import math

from sparkenv.core.report import Finding, GotchaId, Status
from sparkenv.facts.parallelism import Parallelism
from sparkenv.knowledge import multinode

G = GotchaId.G10
SUBJECT = "parallelism"


UNKNOWN = "GPUs per node unknown (NVML gave none)"


def _per_node(p: Parallelism) -> tuple[int | None, str]:
    """GPUs per node, and how that is known; None when nothing says (no NVML count, not a Spark)."""
    if p.local_gpus:
        return p.local_gpus, f"this node has {p.local_gpus} GPU{'s' if p.local_gpus > 1 else ''}"
    if p.spark:
        n = multinode().parallelism.spark_gpus
        return n, f"a Spark has {n} GPU"
    return None, UNKNOWN


def judge(p: Parallelism) -> Finding:
    width = p.tp * p.pp
    counted, known = _per_node(p)
    if counted is None and width > 1:
        # whether TP × PP crosses the link depends on the count the gate could not read: never a guess
        sizes = f"tensor parallel size {p.tp}" + (f" × pipeline parallel size {p.pp}" if p.pp > 1 else "")
        across = f" across {p.nodes} nodes" if p.nodes > 1 else ""
        return Finding(
            id=G,
            status=Status.INFO,
            summary=f"{sizes}{across}: whether it crosses the link is unknown: {known}",
            subject=SUBJECT,
            evidence=(*p.evidence, known),
            fix="run the gate where NVML sees the GPUs (docker run --gpus all), or on the Spark itself",
        )
    per_node = counted or 1  # width 1 needs no count: nothing is split across GPUs
    needed = math.ceil(width / per_node)
    nodes = max(p.nodes, needed) if p.ray else p.nodes
    sizes = f"tensor parallel size {p.tp}" + (f" × pipeline parallel size {p.pp}" if p.pp > 1 else "")
    ev = (*p.evidence, known)

    def finding(status: Status, summary: str, fix: str | None = None) -> Finding:
        return Finding(id=G, status=status, summary=summary, subject=SUBJECT, evidence=ev, fix=fix)

    if width <= per_node:
        if nodes <= 1:
            text = f"single node{f', {sizes}' if width > 1 else ''}: nothing crosses the link"
        elif width <= 1:
            text = f"{nodes} nodes without tensor parallelism (DDP/FSDP): fits ConnectX-7"
        else:
            text = f"{nodes} nodes, {sizes} within each node ({known}): only gradients cross the link"
        return finding(Status.PASS, text)
    if nodes < needed:
        return finding(
            Status.FAIL,
            f"{sizes} needs {width} GPUs but {known} and the launch names {nodes} node"
            f"{'s' if nodes > 1 else ''}: the launcher waits for GPUs that are not there",
            "start the other Sparks (a Ray cluster: `ray start --head` on one, `ray start --address "
            f"HEAD:{multinode().ray.default_gcs_port}` on the others, then --distributed-executor-backend "
            "ray), or lower the sizes",
        )
    kind = "serving" if p.serving else "training"
    if p.tp <= per_node:
        return finding(
            Status.PASS,
            f"{kind} with {sizes} across {nodes} nodes, tensor parallelism within each node ({known}): "
            "only pipeline activations cross the link",
        )
    if not p.serving:
        return finding(
            Status.FAIL,
            f"training with tensor parallel size {p.tp} across {nodes} nodes ({known}): TP traffic is too "
            "fine-grained for the link, runs hang or crawl",
            "train with DDP or FSDP across Sparks; keep TP inside one node",
        )
    data = multinode().parallelism
    if p.link_gbs is not None:
        bandwidth = f"the link measured {p.link_gbs:g} GB/s (--link-test)"
    else:
        bandwidth = f"~{data.nominal_busbw_gbs:g} GB/s on a healthy Spark pair ({data.nominal_source})"
    return finding(
        Status.WARN,
        f"serving with tensor parallel size {p.tp} across {nodes} nodes ({known}): every layer's "
        f"all-reduce crosses the link, {bandwidth}; NVIDIA's two-Spark playbook does this "
        f"({data.two_spark_tp_source}), expect the link to cap tokens/s",
        f"or pipeline parallelism across the nodes with TP within each: {p.flags[0]} {per_node} "
        f"{p.flags[1]} {needed} ({data.alternative_source})",
    )

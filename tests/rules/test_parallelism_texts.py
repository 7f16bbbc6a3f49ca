"""rules/parallelism.py (G10): the words each verdict gives, in full, since they are what the user acts on —
the summary that says what crosses the link and the fix that says what to run instead. The launchers'
readings are tests/environment/test_parallelism.py's; here the facts are given directly, each case at
the edge where the verdict or its wording changes (one node or two, TP within the node or across, GPUs
known or not). Figures and addresses in the texts come from data/multinode.toml."""

from __future__ import annotations

import pytest

from sparkenv.core.report import Status
from sparkenv.facts.parallelism import Parallelism
from sparkenv.knowledge import multinode
from sparkenv.rules import parallelism

DATA = multinode().parallelism
PORT = multinode().ray.default_gcs_port
START_SPARKS = (
    "start the other Sparks (a Ray cluster: `ray start --head` on one, `ray start --address "
    f"HEAD:{PORT}` on the others, then --distributed-executor-backend ray), or lower the sizes"
)
TRAIN_FIX = "train with DDP or FSDP across Sparks; keep TP inside one node"


def judge(**kw) -> tuple[Status, str, str | None, tuple[str, ...]]:
    f = parallelism.judge(Parallelism(**{"pp": 1, "nodes": 1, "local_gpus": 1, "serving": False, **kw}))
    assert (f.id.value, f.subject) == ("G10", "parallelism"), f
    return f.status, f.summary, f.fix, f.evidence


def test_one_node_one_gpu_without_sizes():
    assert judge(tp=1)[:3] == (Status.PASS, "single node: nothing crosses the link", None)


def test_one_node_with_tp_inside_it():
    got = judge(tp=2, local_gpus=2)
    assert got[:3] == (Status.PASS, "single node, tensor parallel size 2: nothing crosses the link", None)
    assert got[3] == ("this node has 2 GPUs",)


def test_more_gpus_asked_than_one_node_and_the_launch_has():
    status, summary, fix, _ = judge(tp=2)
    assert status is Status.FAIL and fix == START_SPARKS
    assert summary == (
        "tensor parallel size 2 needs 2 GPUs but this node has 1 GPU and the launch names 1 node: the "
        "launcher waits for GPUs that are not there"
    )


def test_more_gpus_asked_than_two_nodes_have():
    status, summary, fix, _ = judge(tp=2, pp=2, nodes=2)
    assert status is Status.FAIL and fix == START_SPARKS
    assert summary == (
        "tensor parallel size 2 × pipeline parallel size 2 needs 4 GPUs but this node has 1 GPU and the "
        "launch names 2 nodes: the launcher waits for GPUs that are not there"
    )


def test_pipeline_across_nodes_tp_within():
    status, summary, fix, _ = judge(tp=1, pp=2, nodes=2, serving=True)
    assert (status, fix) == (Status.PASS, None)
    assert summary == (
        "serving with tensor parallel size 1 × pipeline parallel size 2 across 2 nodes, tensor "
        "parallelism within each node (this node has 1 GPU): only pipeline activations cross the link"
    )


def test_data_parallel_training_across_nodes():
    assert judge(tp=1, nodes=2)[:3] == (
        Status.PASS,
        "2 nodes without tensor parallelism (DDP/FSDP): fits ConnectX-7",
        None,
    )


def test_training_with_tp_across_nodes():
    status, summary, fix, _ = judge(tp=2, nodes=2)
    assert (status, fix) == (Status.FAIL, TRAIN_FIX)
    assert summary == (
        "training with tensor parallel size 2 across 2 nodes (this node has 1 GPU): TP traffic is too "
        "fine-grained for the link, runs hang or crawl"
    )


@pytest.mark.parametrize("link_gbs", [None, 21.3])
def test_serving_with_tp_across_nodes(link_gbs):
    flags = ("--tp-size", "--pp-size")
    status, summary, fix, _ = judge(tp=2, nodes=2, serving=True, link_gbs=link_gbs, flags=flags)
    bandwidth = (
        f"~{DATA.nominal_busbw_gbs:g} GB/s on a healthy Spark pair ({DATA.nominal_source})"
        if link_gbs is None
        else "the link measured 21.3 GB/s (--link-test)"
    )
    assert status is Status.WARN
    assert summary == (
        "serving with tensor parallel size 2 across 2 nodes (this node has 1 GPU): every layer's all-reduce "
        f"crosses the link, {bandwidth}; NVIDIA's two-Spark playbook does this ({DATA.two_spark_tp_source}), "
        "expect the link to cap tokens/s"
    )
    assert fix == (
        "or pipeline parallelism across the nodes with TP within each: --tp-size 1 --pp-size 2 "
        f"({DATA.alternative_source})"
    )


def test_gpus_per_node_unknown_are_the_ranks_spread_over_the_nodes():
    """No NVML count: a judgement that needs the GPUs per node is INFO "unknown" with how to learn it, never
    a PASS on a guessed count (issue 42); TP 1 needs no count; on a Spark, the data file's GPU count."""
    unknown = "run the gate where NVML sees the GPUs (docker run --gpus all), or on the Spark itself"
    status, summary, fix, evidence = judge(tp=2, local_gpus=None)
    assert (status, fix) == (Status.INFO, unknown)
    assert summary == (
        "tensor parallel size 2: whether it crosses the link is unknown: "
        "GPUs per node unknown (NVML gave none)"
    )
    assert evidence == ("GPUs per node unknown (NVML gave none)",)
    assert judge(tp=1, local_gpus=None)[:2] == (Status.PASS, "single node: nothing crosses the link")
    status, summary, fix, evidence = judge(tp=2, pp=2, nodes=2, local_gpus=None)
    assert (status, fix) == (Status.INFO, unknown)
    assert summary == (
        "tensor parallel size 2 × pipeline parallel size 2 across 2 nodes: whether it crosses the link is "
        "unknown: GPUs per node unknown (NVML gave none)"
    )
    status, _, _, evidence = judge(tp=2, nodes=2, local_gpus=None, spark=True, serving=True)
    assert (status, evidence) == (Status.WARN, (f"a Spark has {DATA.spark_gpus} GPU",))

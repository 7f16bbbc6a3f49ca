"""rules/g10.py (live only) with the parts it composes, rules/g10_link.py and rules/g10_agreement.py:
tensor parallelism across Sparks, this node's link on real /sys trees recorded from Sparks
(tests/fixtures/sys, read by the gate's own reader), the nodes' agreement, known-bad hosts."""

from __future__ import annotations

from pathlib import Path

import pytest
import stage_facts as sf
from rule_table import Row, check, ids

from sparkenv.core.report import Status
from sparkenv.environment import sysfs

SYS = Path(__file__).resolve().parents[1] / "fixtures" / "sys"
TORCHRUN = ["torchrun", "--nnodes", "2", "--node-rank", "0", "--master-addr", "192.168.177.11", "train.py"]
PLAYBOOK_NCCL = {
    "NCCL_IB_HCA": "=rocep1s0f1,roceP2p1s0f1",
    "NCCL_IB_GID_INDEX": "3",
    "NCCL_SOCKET_IFNAME": "enp1s0f1np1",
}
SAME_IMAGE = "run the same image (pull it by digest) with the same lock and settings on every node"


def _digest(**changes: str) -> dict:
    return {
        "sparkenv": "0.1.0",
        "image": "r/x@sha256:" + "a" * 64,
        "lock": "sha256:" + "1" * 64,
        "driver": "580.95.05",
        "cuda": "13.0",
        "torch": "2.9.0a0+nv25.11",
        "nccl": "2.28.9",
        "python": "3.12.3",
        "machine": "aarch64",
        "gpu": "NVIDIA GB10",
        "nccl_settings": {"NCCL_IB_HCA": PLAYBOOK_NCCL["NCCL_IB_HCA"]},
        **changes,
    }


def _two_sparks(tree: str = "spark-healthy", nccl_env: dict | None = None, theirs: dict | None = None):
    """Node 0 of a torchrun across two Sparks: its /sys tree read by the gate's reader, its NCCL
    settings, and the digests both nodes published through the job's store."""
    peers = {
        "0": {"ordinal": 0, "name": "spark-a", "digest": _digest()},
        "1": {"ordinal": 1, "name": "spark-b", "digest": _digest(**(theirs or {}))},
    }
    env = PLAYBOOK_NCCL if nccl_env is None else nccl_env
    section = {
        "multi_node": True,
        "link": sysfs.read_link(str(SYS / tree)),
        "nccl_env": env,
        "nccl_confs": [],
        "resolved": {},
        "agreement": {"store": "192.168.177.11:29517", "peers": peers, "missing": []},
    }
    return sf.live_raw(
        "gb10", workload=TORCHRUN, env={**env, "NVIDIA_PYTORCH_VERSION": "25.10"}, multinode=section
    )


ROWS = [
    Row(
        "g10.live",
        "single node",
        lambda c: sf.live_raw("h200-static"),
        "parallelism",
        Status.PASS,
        None,
        "nothing crosses the link",
    ),
    Row(
        "g10.live",
        "DDP across two Sparks",
        lambda c: _two_sparks(),
        "parallelism",
        Status.PASS,
        None,
        "without tensor parallelism",
    ),
    Row(
        "g10.live",
        "training with TP across nodes",
        lambda c: sf.live_raw(
            "gb10",
            workload=["accelerate", "launch", "--num_machines", "2", "train.py"],
            env={"PARALLELISM_CONFIG_TP_SIZE": "2"},
        ),
        "parallelism",
        Status.FAIL,
        "train with DDP or FSDP across Sparks",
        "too fine-grained for the link",
    ),
    Row(
        "g10.live",
        "serving with TP across nodes",
        lambda c: sf.live_raw(
            "gb10", workload=["vllm", "serve", "m", "--tensor-parallel-size", "2", "--nnodes", "2"]
        ),
        "parallelism",
        Status.WARN,
        "--tensor-parallel-size 1 --pipeline-parallel-size 2",
        "serving with tensor parallel size 2 across 2 nodes",
    ),
    Row("g10.live", "a healthy ConnectX-7 port", lambda c: _two_sparks(), "rdma:rocep1s0f1", Status.PASS),
    Row(
        "g10.live",
        "a port at 25 Gb/s",
        lambda c: _two_sparks("spark-degraded"),
        "rdma:rocep1s0f1",
        Status.WARN,
        "reseat or replace the QSFP cable",
        "25 Gb/s, expected 200",
    ),
    Row("g10.live", "NCCL_IB_HCA naming both halves", lambda c: _two_sparks(), "NCCL_IB_HCA", Status.PASS),
    Row(
        "g10.live",
        "NCCL_IB_HCA naming no such device",
        lambda c: _two_sparks(nccl_env={**PLAYBOOK_NCCL, "NCCL_IB_HCA": "mlx5_0,mlx5_1"}),
        "NCCL_IB_HCA",
        Status.FAIL,
        "set NCCL_IB_HCA to this node's devices",
        "no such RDMA device",
    ),
    Row(
        "g10.live",
        "the nodes agree",
        lambda c: _two_sparks(),
        "agreement",
        Status.PASS,
        None,
        "2 nodes agree",
    ),
    Row(
        "g10.live",
        "another driver on node 1",
        lambda c: _two_sparks(theirs={"driver": "580.159.04"}),
        "agreement:driver",
        Status.FAIL,
        SAME_IMAGE,
        "node 1 (spark-b) has 580.159.04",
    ),
    Row(
        "g10.live",
        "CmaTotal 0 kB with a multi-node workload",
        lambda c: sf.live_raw(
            "gb10",
            workload=TORCHRUN,
            host={"kernel": "7.0.0-1019-nvidia"},
            meminfo={"MemTotal": 125000000, "MemAvailable": 120000000, "CmaTotal": 0},
        ),
        "host:cma-zero",
        Status.FAIL,
        "boot the 6.17 DGX OS kernel",
        "RDMA memory registration",
    ),
]


@pytest.mark.parametrize("row", ROWS, ids=ids(ROWS))
def test_g10(row, ctx):
    check(row, ctx)

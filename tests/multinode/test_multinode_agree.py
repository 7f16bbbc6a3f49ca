"""Two gates in front of a real two-node torchrun (CPU torch, gloo), one per network namespace: they
agree through a TCPStore at the job's master address, or block with the difference named on both nodes;
a missing peer is reported within the deadline."""

from __future__ import annotations

import json
import os
import re

import multinode_helpers as mh
import pytest

pytestmark = [pytest.mark.torch, pytest.mark.netns]


@pytest.fixture
def nodes():
    python = mh.torch_python()
    mh.require_netns()
    pair = mh.TwoNodes(str(os.getpid() % 10000), python)
    yield pair
    pair.close()


@pytest.fixture
def locks(tmp_path):
    a, b = tmp_path / "pylock.a.toml", tmp_path / "pylock.b.toml"
    a.write_text(
        'lock-version = "1.0"\ncreated-by = "test"\n[[packages]]\nname = "peft"\nversion = "0.17.1"\n'
    )
    b.write_text(
        'lock-version = "1.0"\ncreated-by = "test"\n[[packages]]\nname = "peft"\nversion = "0.18.0"\n'
    )
    return a, b


def test_two_gates_agree_and_the_job_runs(nodes, tmp_path, locks):
    """Agreement, then --link-test (gloo between the namespaces), then torchrun's own job."""
    env = {"SPARKENV_LOCK": str(locks[0]), "SPARKENV_IMAGE": "127.0.0.1:5000/train@sha256:" + "a" * 64}
    ran = nodes.gate_torchrun([0, 1], tmp_path, {0: env, 1: env}, ("--deadline", "20", "--link-test"))
    for i, r in ran.items():
        agree = r.g10("agree")
        assert len(agree) == 1 and agree[0].startswith("G10 PASS: 2 nodes agree on "), r.err
        assert "lock" in agree[0] and "image" in agree[0]
        assert not r.g10("FAIL") and not r.g10("ERROR"), r.err
        assert r.code == 0, r.err
        test = r.g10("all-reduce")
        assert len(test) == 1 and re.match(
            r"G10 INFO: gloo all-reduce of 64 MiB across 2 nodes: [\d.]+ GB/s bus bandwidth \(median of \d+",
            test[0],
        ), r.err
        assert f"workload rank {i} of 2 sum 3" in r.out  # the gate exec'd torchrun: the job ran


@pytest.mark.parametrize("odd", [0, 1])
def test_different_lock_blocks_both_nodes_naming_it(nodes, tmp_path, locks, odd):
    envs = {i: {"SPARKENV_LOCK": str(locks[1] if i == odd else locks[0])} for i in (0, 1)}
    ran = nodes.gate_torchrun([0, 1], tmp_path, envs, ("--deadline", "20", "--policy", "strict"))
    for r in ran.values():
        fail = r.g10("disagree")
        assert len(fail) == 1, r.err
        assert re.match(
            r"G10 FAIL: nodes disagree on lock: node 0 \(\S+\) has sha256:\S+, node 1 \(\S+\) has sha256:",
            fail[0],
        )
        assert r.code == 1 and "start blocked" in r.err
        assert "workload rank" not in r.out  # torchrun never started


@pytest.mark.parametrize("odd", [0, 1])
def test_different_nccl_setting_is_named(nodes, tmp_path, odd):
    envs = {odd: {"NCCL_IB_HCA": "=rocep1s0f1,roceP2p1s0f1"}}
    ran = nodes.gate_torchrun([0, 1], tmp_path, envs, ("--deadline", "20", "--policy", "strict"))
    for r in ran.values():
        fail = r.g10("disagree on NCCL_IB_HCA")
        assert len(fail) == 1, r.err
        mine, theirs = (
            ("=rocep1s0f1,roceP2p1s0f1", "unset") if odd == 0 else ("unset", "=rocep1s0f1,roceP2p1s0f1")
        )
        assert (
            "node 0 (" in fail[0]
            and f"has {mine}" in fail[0]
            and "node 1 (" in fail[0]
            and f"has {theirs}" in fail[0]
        )
        assert r.code == 1


@pytest.mark.parametrize("present", [0, 1])
def test_missing_peer_is_reported_within_the_deadline(nodes, tmp_path, present):
    deadline = 6.0
    report = tmp_path / "report.json"
    ran = nodes.gate_torchrun(
        [present],
        tmp_path,
        {present: {}},
        ("--deadline", str(deadline), "--policy", "strict", "--report", str(report)),
    )[present]
    lines = ran.g10("agreement") + ran.g10("did not publish")
    # strict means strict: agreement not reached blocks the start, and the line says so
    assert lines and all(" FAIL: " in ln and "every node agreed" in ln for ln in lines), ran.err
    assert ran.code == 1 and "start blocked" in ran.err and "workload rank" not in ran.out
    if present == 0:
        assert "node(s) 1 of 2 did not publish" in ran.err
    else:
        assert "could not reach the store at 10.77.0.1:29517" in ran.err
    data = json.loads(report.read_text())
    assert data["context"]["gather_s"] <= deadline + 1.0  # the contract: the gate answers within its deadline

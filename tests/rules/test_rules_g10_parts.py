"""rules/g10.py's glue between the launch, the multinode probe's answer and the three judgements: the
lines it writes itself (an unreadable launcher config or nccl.conf, a snapshot without link facts, a
failed probe), what it hands each part (the node's GPU count, the link test's measured bandwidth, the
launcher's flags, --policy strict), on the GB10 snapshot from public reports with a /sys tree recorded
for the link (tests/fixtures/sys)."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

import stage_facts as sf

from sparkenv.core.report import Status
from sparkenv.environment import sysfs
from sparkenv.rules import g10

SYS = Path(__file__).resolve().parents[1] / "fixtures" / "sys"
TORCHRUN = ["torchrun", "--nnodes", "2", "--node-rank", "0", "--master-addr", "192.168.177.11", "train.py"]
NCCL = {
    "NCCL_IB_HCA": "=rocep1s0f1,roceP2p1s0f1",
    "NCCL_IB_GID_INDEX": "3",
    "NCCL_SOCKET_IFNAME": "enp1s0f1np1",
}


def _node(section=None, workload=TORCHRUN, **more):
    base = {
        "multi_node": True,
        "link": sysfs.read_link(str(SYS / "spark-healthy")),
        "nccl_env": NCCL,
        "nccl_confs": [],
        "resolved": {},
    }
    return sf.live_raw(
        "gb10", workload=workload, env=dict(NCCL), multinode={**base, **(section or {})}, **more
    )


def _by_subject(findings):
    return {f.subject: f for f in findings}


def test_nccl_conf_files_are_named_or_said_unreadable(tmp_path):
    conf = str(tmp_path / "nccl.conf")
    confs = [
        {"path": conf, "settings": {"NCCL_DEBUG": "INFO", "NCCL_IB_HCA": "mlx5_0"}},
        {"path": "/etc/nccl.conf", "error": "a directory"},
        {"path": "/root/.nccl.conf", "settings": {}},
    ]
    found = _by_subject(g10.live_link(_node({"nccl_confs": confs})))
    named = found[f"nccl.conf:{conf}"]
    assert named.status is Status.INFO
    assert named.summary == f"{conf} sets NCCL_DEBUG, NCCL_IB_HCA (the environment overrides it)"
    assert named.evidence == ("NCCL_DEBUG=INFO", "NCCL_IB_HCA=mlx5_0")
    bad = found["nccl.conf:/etc/nccl.conf"]
    assert bad.status is Status.ERROR
    assert bad.summary == (
        "/etc/nccl.conf cannot be read (a directory): the NCCL settings above may not be what NCCL uses"
    )
    assert bad.fix == "make /etc/nccl.conf a regular, readable file, or remove it"
    assert "nccl.conf:/root/.nccl.conf" not in found  # it sets nothing: nothing to say


def test_a_snapshot_without_link_facts_says_so_once():
    facts = sf.live_raw("gb10", workload=TORCHRUN, multinode={"multi_node": False})
    [f] = g10.live_link(facts)
    assert f.status is Status.INFO and f.subject == "link"
    assert f.summary == "link and agreement not checked: the snapshot has no link facts"
    assert g10.live_agreement(facts) == []
    # a single-node workload: no link to judge at all
    assert g10.live_link(sf.live_raw("gb10", workload=["python", "train.py"])) == []


def test_a_failed_multinode_probe_is_an_error_line():
    facts = sf.live_raw("gb10", workload=TORCHRUN, probe_errors={"multinode": "timed out after 4 s"})
    [f] = g10.live_link(facts)
    assert f.status is Status.ERROR and "multinode probe failed: timed out after 4 s" in f.summary
    assert f.subject == "link"  # said once, where the link's findings would be


def test_settings_from_an_nccl_conf_alone_are_judged():
    """NCCL reads nccl.conf where the environment sets nothing: the link is judged on the file's settings."""
    confs = [{"path": "/etc/nccl.conf", "settings": dict(NCCL)}]
    found = _by_subject(g10.live_link(_node({"nccl_env": {}, "nccl_confs": confs})))
    assert found["NCCL_IB_HCA"].status is Status.PASS
    assert found["NCCL_SOCKET_IFNAME"].summary == "NCCL_SOCKET_IFNAME=enp1s0f1np1 selects enp1s0f1np1"


def test_a_ray_workload_on_a_multinode_cluster_gets_its_link_checked():
    """A Ray workload names no node count: the probe's answer (the cluster has more than one node) makes it
    multi-node, so its link is judged."""
    facts = sf.live_raw(
        "gb10",
        workload=["python", "serve.py"],
        env={"RAY_ADDRESS": "10.0.0.1:6379", **NCCL},
        multinode={
            "multi_node": True,
            "link": sysfs.read_link(str(SYS / "spark-healthy")),
            "nccl_env": NCCL,
            "nccl_confs": [],
            "resolved": {},
        },
    )
    found = _by_subject(g10.live_link(facts))
    assert found["NCCL_IB_HCA"].status is Status.PASS and found["rdma:rocep1s0f1"].status is Status.PASS


def test_agreement_gets_the_node_count_and_strict_only_in_front_of_a_workload():
    agreement = {"store": "192.168.177.11:29517", "error": "could not reach the store", "nodes": 3}
    facts = _node({"agreement": agreement})
    [f] = g10.live_agreement(facts)
    assert f.status is Status.ERROR and f.summary.startswith("agreement between the 3 nodes could not")
    assert g10.live_agreement(replace(facts, strict=True))[0].status is Status.FAIL
    no_workload = replace(_node({"agreement": agreement}, workload=[]), strict=True)
    assert g10.live_agreement(no_workload)[0].status is Status.ERROR


def test_a_ray_cluster_that_could_not_be_asked_is_said():
    ray = ["python", "serve.py"]
    asked = {"store": "Ray cluster at 10.0.0.1:6379", "error": "head unreachable"}
    facts = sf.live_raw(
        "gb10", workload=ray, env={"RAY_ADDRESS": "10.0.0.1:6379"}, multinode={"agreement": asked}
    )
    [f] = g10.live_agreement(facts)
    assert (
        f.status is Status.ERROR
        and "through the Ray cluster could not be checked: head unreachable" in f.summary
    )
    strict = g10.live_agreement(replace(facts, strict=True))
    assert [(x.status, x.subject) for x in strict] == [(Status.FAIL, "agreement")]  # it blocks the workload
    assert "--policy strict starts the workload only when every node agreed" in strict[0].summary
    assert "start the head (`ray start --head`) first" in (strict[0].fix or "")
    quiet = sf.live_raw("gb10", workload=ray, multinode={"agreement": {"store": "x"}})
    assert g10.live_agreement(quiet) == []


def test_an_unreadable_launcher_config_is_a_warning():
    configs = {
        "accelerate": {"path": "/root/.cache/huggingface/accelerate/default_config.yaml", "error": "bad YAML"}
    }
    found = _by_subject(
        g10.live_parallelism(sf.live_raw("gb10", workload=["python", "t.py"], configs=configs))
    )
    f = found["config:/root/.cache/huggingface/accelerate/default_config.yaml"]
    assert f.status is Status.WARN
    assert f.summary == (
        "accelerate config /root/.cache/huggingface/accelerate/default_config.yaml unreadable (bad YAML): "
        "its node count and tensor-parallel size were not read"
    )
    assert f.fix == (
        "repair or remove /root/.cache/huggingface/accelerate/default_config.yaml (accelerate reads it at "
        "launch, as the gate did), then run the gate again"
    )


def test_serving_across_nodes_names_the_launchers_own_flags_and_the_measured_link():
    workload = [
        "python3",
        "-m",
        "sglang.launch_server",
        "--model-path",
        "M",
        "--tp-size",
        "2",
        "--nnodes",
        "2",
    ]
    link_test = {"backend": "nccl", "busbw_gbs": 21.3}
    facts = sf.live_raw("gb10", workload=workload, multinode={"agreement": {"link_test": link_test}})
    [f] = [x for x in g10.live_parallelism(facts) if x.subject == "parallelism"]
    assert f.status is Status.WARN
    assert "--tp-size 1 --pp-size 2" in (f.fix or "")
    assert "the link measured 21.3 GB/s (--link-test)" in f.summary
    gloo = sf.live_raw(
        "gb10", workload=workload, multinode={"agreement": {"link_test": {**link_test, "backend": "gloo"}}}
    )
    [g] = [x for x in g10.live_parallelism(gloo) if x.subject == "parallelism"]
    assert "the link measured" not in g.summary  # gloo's TCP figure is not the link's
    failed = sf.live_raw(
        "gb10", workload=workload, multinode={"agreement": {"link_test": {**link_test, "error": "timed out"}}}
    )
    [h] = [x for x in g10.live_parallelism(failed) if x.subject == "parallelism"]
    assert "the link measured" not in h.summary  # a link test that failed measured nothing to quote


def test_the_node_gpu_count_comes_from_nvml():
    """An H200 node (not a Spark, whose GPU count is known): NVML's count, or no guess without it."""
    serve = ["vllm", "serve", "m", "--tensor-parallel-size", "2"]
    [f] = [
        x
        for x in g10.live_parallelism(sf.live_raw("h200-static", workload=serve))
        if x.subject == "parallelism"
    ]
    assert "this node has 1 GPU" in f.evidence
    no_nvml = sf.live_raw("h200-static", workload=serve, probe_errors={"gpu": "no NVML"})
    [f] = [x for x in g10.live_parallelism(no_nvml) if x.subject == "parallelism"]
    assert f.status is Status.INFO and "whether it crosses the link is unknown" in f.summary


def test_a_readable_launcher_config_is_read_and_named_as_evidence():
    """accelerate's YAML read as the launcher reads it: its node count and TP size are the evidence of the
    TP-across-Sparks FAIL, and a config that was read is no warning."""
    data = {"num_machines": 2, "machine_rank": 0, "parallelism_config": {"parallelism_config_tp_size": 2}}
    configs = {"accelerate": {"path": "c.yaml", "data": data}}
    found = g10.live_parallelism(
        sf.live_raw("gb10", workload=["accelerate", "launch", "t.py"], configs=configs)
    )
    assert [x.subject for x in found] == ["parallelism"]
    [f] = found
    assert f.status is Status.FAIL
    assert f.evidence == (
        "accelerate c.yaml num_machines=2",
        "accelerate c.yaml parallelism_config.parallelism_config_tp_size=2",
        "this node has 1 GPU",
    )
    assert f.fix == "train with DDP or FSDP across Sparks; keep TP inside one node"


def test_known_hosts_judge_this_node_against_its_launch():
    """The kernel, /proc/meminfo, the driver and the launch's node count go to rules/hosts.py: a kernel
    without CMA (data/hosts.toml's cma-zero) warns on one node and fails a workload that spans two."""
    from sparkenv.knowledge import hosts as host_data

    issue = next(i for i in host_data().issues if i.id == "cma-zero")
    kernel = "7.0.0-1019-nvidia"
    meminfo = {"CmaTotal": 0, "MemTotal": 128 << 20}
    for workload, status in ((["python", "t.py"], Status.WARN), (TORCHRUN, Status.FAIL)):
        facts = sf.live_raw("gb10", workload=workload, host__kernel=kernel, meminfo=meminfo)
        (f,) = g10.live_known_hosts(facts)
        assert (f.status, f.subject, f.fix) == (status, "host:cma-zero", issue.fix), workload
        assert f.evidence[:2] == (f"kernel {kernel}", f"driver {facts.driver_version}")

"""G10 parallelism against the node's GPUs, over real command lines and config files of each launcher
(vLLM, SGLang, TensorRT-LLM, accelerate, DeepSpeed, torchrun with Megatron-style arguments), both ways:
the launch is read as the gate reads it (environment/launch.py, configs through the gate's own config
probe from files on disk) and judged by the one rule (rules/parallelism.py)."""

from __future__ import annotations

import json
import shlex

import pytest

from sparkenv.core.report import Status
from sparkenv.environment import launch
from sparkenv.facts.parallelism import Parallelism
from sparkenv.gate.probes import probe_configs
from sparkenv.knowledge import multinode
from sparkenv.rules import parallelism

RAY = {"RAY_ADDRESS": "192.168.177.11:6379"}
NOMINAL = f"~{multinode().parallelism.nominal_busbw_gbs:g} GB/s"


def judge(workload, env, gpus, tmp_path, files=None, link_gbs=None, spark=False):
    for name, text in (files or {}).items():
        (tmp_path / name).write_text(text)
    workload = (
        shlex.split(workload.replace("{dir}", str(tmp_path))) if isinstance(workload, str) else workload
    )
    plan = launch.read(workload, env, probe_configs(workload))
    facts = Parallelism(
        tp=plan.tp,
        pp=plan.pp,
        nodes=plan.nodes,
        local_gpus=gpus,
        serving=plan.serving,
        ray=plan.ray,
        spark=spark,
        link_gbs=link_gbs,
        evidence=tuple(str(s) for s in (plan.nodes_from, plan.tp_from, plan.pp_from) if s),
        flags={"sglang": ("--tp-size", "--pp-size"), "trtllm": ("--tp_size", "--pp_size")}.get(
            plan.launcher or "", ("--tensor-parallel-size", "--pipeline-parallel-size")
        ),
    )
    return parallelism.judge(facts)


CASES = [
    # --- vLLM, as NVIDIA's two-Spark playbook runs it (Ray) and as vLLM's docs advise (PP across nodes)
    pytest.param(
        "vllm serve M --tensor-parallel-size 2 --distributed-executor-backend ray",
        RAY,
        1,
        None,
        Status.WARN,
        ["serving with tensor parallel size 2 across 2 nodes (this node has 1 GPU)", NOMINAL],
        "--tensor-parallel-size 1 --pipeline-parallel-size 2",
        id="vllm-ray-tp2-on-one-gpu",
    ),
    pytest.param(
        "vllm serve M -tp 1 -pp 2 --distributed-executor-backend ray",
        RAY,
        1,
        None,
        Status.PASS,
        ["serving with tensor parallel size 1 × pipeline parallel size 2 across 2 nodes", "within each node"],
        None,
        id="vllm-ray-pp2",
    ),
    pytest.param(
        "vllm serve M --tensor-parallel-size 2",
        {},
        1,
        None,
        Status.FAIL,
        ["tensor parallel size 2 needs 2 GPUs but this node has 1 GPU and the launch names 1 node"],
        "ray start --head",
        id="vllm-tp2-one-spark-no-cluster",
    ),
    pytest.param(
        "vllm serve M --tensor-parallel-size 8",
        {},
        8,
        None,
        Status.PASS,
        ["single node, tensor parallel size 8: nothing crosses the link"],
        None,
        id="vllm-tp8-on-8-gpus",
    ),
    pytest.param(
        "vllm serve M --config {dir}/vllm.yaml --distributed-executor-backend ray",
        RAY,
        1,
        {"vllm.yaml": "tensor-parallel-size: 2\nmax-model-len: 8192\n"},
        Status.WARN,
        ["tensor parallel size 2 across 2 nodes", "vllm.yaml tensor-parallel-size=2"],
        "--pipeline-parallel-size 2",
        id="vllm-config-yaml",
    ),
    # --- SGLang: its own node count, its own flag spelling in the fix
    pytest.param(
        "python3 -m sglang.launch_server --model-path M --tp-size 2 --nnodes 2 --node-rank 0 "
        "--dist-init-addr 192.168.177.11:5000",
        {},
        1,
        None,
        Status.WARN,
        ["serving with tensor parallel size 2 across 2 nodes"],
        "--tp-size 1 --pp-size 2",
        id="sglang-tp2-two-nodes",
    ),
    pytest.param(
        "python3 -m sglang.launch_server --model-path M --tp-size 1 --pp-size 2 --nnodes 2 "
        "--node-rank 1 --dist-init-addr 192.168.177.11:5000",
        {},
        1,
        None,
        Status.PASS,
        ["pipeline activations cross the link"],
        None,
        id="sglang-pp2-two-nodes",
    ),
    # --- TensorRT-LLM under mpirun across two hosts, sizes from the command line or its YAML
    pytest.param(
        "mpirun -np 2 -H spark-a:1,spark-b:1 trtllm-llmapi-launch trtllm-serve M --tp_size 2",
        {},
        1,
        None,
        Status.WARN,
        ["serving with tensor parallel size 2 across 2 nodes", "mpirun hosts spark-a,spark-b"],
        "--tp_size 1 --pp_size 2",
        id="trtllm-tp2-mpirun",
    ),
    pytest.param(
        "mpirun -np 2 -H spark-a:1,spark-b:1 trtllm-llmapi-launch trtllm-serve M "
        "--extra_llm_api_options {dir}/trt.yaml",
        {},
        1,
        {"trt.yaml": "tensor_parallel_size: 1\npipeline_parallel_size: 2\n"},
        Status.PASS,
        ["tensor parallel size 1 × pipeline parallel size 2 across 2 nodes"],
        None,
        id="trtllm-pp2-yaml",
    ),
    # --- training: TP across nodes is a FAIL whatever the launcher; DDP/FSDP and PP are fine
    pytest.param(
        "accelerate launch --config_file {dir}/acc.yaml train.py",
        {},
        1,
        {
            "acc.yaml": "num_machines: 2\nmachine_rank: 0\n"
            "parallelism_config:\n  parallelism_config_tp_size: 2\n"
        },
        Status.FAIL,
        ["training with tensor parallel size 2 across 2 nodes (this node has 1 GPU)"],
        "DDP or FSDP",
        id="accelerate-tp2",
    ),
    pytest.param(
        "accelerate launch --config_file {dir}/acc.yaml train.py",
        {},
        1,
        {"acc.yaml": "num_machines: 2\nmachine_rank: 0\ndistributed_type: FSDP\n"},
        Status.PASS,
        ["2 nodes without tensor parallelism (DDP/FSDP)"],
        None,
        id="accelerate-fsdp",
    ),
    pytest.param(
        "deepspeed --num_nodes 2 --master_addr 10.0.0.1 train.py --deepspeed {dir}/ds.json",
        {},
        1,
        {"ds.json": json.dumps({"train_batch_size": 8, "tensor_parallel": {"autotp_size": 2}})},
        Status.FAIL,
        ["training with tensor parallel size 2 across 2 nodes"],
        "keep TP inside one node",
        id="deepspeed-autotp2",
    ),
    pytest.param(
        "deepspeed --num_nodes 2 --master_addr 10.0.0.1 train.py --deepspeed {dir}/ds.json",
        {},
        4,
        {"ds.json": json.dumps({"train_batch_size": 8, "tensor_parallel": {"autotp_size": 4}})},
        Status.PASS,
        ["2 nodes, tensor parallel size 4 within each node (this node has 4 GPUs)"],
        None,
        id="deepspeed-autotp-within-node",
    ),
    pytest.param(
        "torchrun --nnodes 2 --nproc-per-node 1 pretrain_gpt.py --tensor-model-parallel-size 2 "
        "--pipeline-model-parallel-size 1",
        {},
        1,
        None,
        Status.FAIL,
        ["training with tensor parallel size 2 across 2 nodes"],
        None,
        id="torchrun-megatron-tp2",
    ),
    pytest.param(
        "torchrun --nnodes 2 --nproc-per-node 1 pretrain_gpt.py --tensor-model-parallel-size 1 "
        "--pipeline-model-parallel-size 2",
        {},
        1,
        None,
        Status.PASS,
        ["training with tensor parallel size 1 × pipeline parallel size 2 across 2 nodes"],
        None,
        id="torchrun-megatron-pp2",
    ),
    # --- no GPU count from NVML and not a Spark: a judgement that needs the count is INFO "unknown", never
    # PASS (it was a PASS "taken as 2": a guess that the ranks spread evenly)
    pytest.param(
        "torchrun --nnodes 2 train.py --tensor-model-parallel-size 2 --pipeline-model-parallel-size 2",
        {},
        None,
        None,
        Status.INFO,
        ["tensor parallel size 2 × pipeline parallel size 2 across 2 nodes: whether it crosses the link"],
        "--gpus all",
        id="unknown-gpus-tp-pp",
    ),
    # the issue's: TP 2 under Ray was "single node … nothing crosses the link" without --nnodes …
    pytest.param(
        "vllm serve M --tensor-parallel-size 2 --distributed-executor-backend ray",
        RAY,
        None,
        None,
        Status.INFO,
        ["tensor parallel size 2: whether it crosses the link is unknown", "GPUs per node unknown"],
        None,
        id="unknown-gpus-ray-tp2",
    ),
    # … and "taken as 1" with it
    pytest.param(
        "vllm serve M --tensor-parallel-size 2 --distributed-executor-backend ray --nnodes 2",
        RAY,
        None,
        None,
        Status.INFO,
        ["whether it crosses the link is unknown"],
        None,
        id="unknown-gpus-ray-tp2-nnodes",
    ),
    # nothing split across GPUs needs no count
    pytest.param(
        "torchrun --nnodes 2 train.py",
        {},
        None,
        None,
        Status.PASS,
        ["2 nodes without tensor parallelism"],
        None,
        id="unknown-gpus-ddp",
    ),
]


@pytest.mark.parametrize(("workload", "env", "gpus", "files", "status", "words", "fix"), CASES)
def test_parallelism_per_launcher(workload, env, gpus, files, status, words, fix, tmp_path):
    f = judge(workload, env, gpus, tmp_path, files)
    text = f.summary + " | " + " | ".join(f.evidence)
    assert f.status is status, text
    for w in words:
        assert w in text, text
    if fix:
        assert fix in (f.fix or ""), f.fix


def test_a_measured_link_replaces_the_nominal_figure(tmp_path):
    workload = ["vllm", "serve", "M", "--tensor-parallel-size", "2", "--distributed-executor-backend", "ray"]
    f = judge(workload, RAY, 1, tmp_path, link_gbs=21.3)
    assert f.status is Status.WARN and "the link measured 21.3 GB/s (--link-test)" in f.summary
    assert NOMINAL not in f.summary


def test_a_spark_without_nvml_counts_one_gpu(tmp_path):
    """The issue's example, where NVML is not visible (a container without --gpus): TP 2 under Ray on a
    Spark spans the two Sparks."""
    workload = ["vllm", "serve", "M", "--tensor-parallel-size", "2", "--distributed-executor-backend", "ray"]
    f = judge(workload, RAY, None, tmp_path, spark=True)
    assert f.status is Status.WARN and "a Spark has 1 GPU" in f.summary


def test_ray_roles_are_read_from_the_commands_of_the_two_spark_recipe():
    head = launch.read(["ray", "start", "--head", "--port", "6379"], {}, {})
    join = launch.read(["ray", "start", "--address", "192.168.177.11:6379", "--block"], {}, {})
    driver = launch.read(["vllm", "serve", "M", "--distributed-executor-backend", "ray"], RAY, {})
    assert (head.ray_role, head.multi_node) == ("head", False)
    assert (join.ray_role, join.nodes, join.ray_address.value) == ("join", 2, "192.168.177.11:6379")
    assert (driver.ray_role, driver.ray_address.value, driver.serving) == (
        "driver",
        "192.168.177.11:6379",
        True,
    )
    plain = launch.read(["python", "train.py"], {}, {})
    assert (plain.ray, plain.ray_role, plain.serving) == (False, None, False)


def test_the_gate_counts_this_nodes_gpus_and_the_ray_clusters_nodes():
    """The issue's example through the gate's G10 rule on a facts snapshot: one GB10 from NVML, vLLM with
    TP 2 under Ray was 'single node: nothing crosses the link'; now a WARN. With the Ray agent's answer
    (2 nodes alive) the node count is the cluster's."""
    from sparkenv.facts.live import GateFacts
    from sparkenv.rules import g10

    workload = ["vllm", "serve", "M", "--tensor-parallel-size", "2", "--distributed-executor-backend", "ray"]
    raw = {
        "workload": workload,
        "env": RAY,
        "configs": {},
        "gpu": {"gpus": [{"name": "NVIDIA GB10", "compute_cap": "12.1"}]},
    }
    (f,) = g10.live_parallelism(GateFacts(raw))
    assert f.status is Status.WARN and "across 2 nodes (this node has 1 GPU)" in f.summary, f.summary
    raw["multinode"] = {"multi_node": True, "agreement": {"cluster": {"alive": 3}}}
    (f,) = g10.live_parallelism(GateFacts(raw))
    assert "across 3 nodes" in f.summary and "Ray cluster: 3 node(s) alive" in f.evidence
    raw["gpu"] = {"gpus": [{"name": "NVIDIA H200"}] * 2}
    raw.pop("multinode")
    (f,) = g10.live_parallelism(GateFacts(raw))
    assert f.status is Status.PASS and f.summary.startswith("single node, tensor parallel size 2")

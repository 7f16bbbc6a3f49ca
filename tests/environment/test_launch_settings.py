"""G10 reads launch settings as the launchers do: accelerate's YAML through PyYAML, its tensor-parallel
settings, torchrun / DeepSpeed / vLLM / SGLang arguments and environment."""

from __future__ import annotations

import pytest

from sparkenv.environment import launch


@pytest.mark.parametrize(
    ("workload", "env", "configs", "expected"),
    [
        (
            ["torchrun", "--nnodes", "1:2", "--rdzv-endpoint", "10.0.0.1:29400", "t.py"],
            {},
            {},
            {"nodes": 2, "master": "10.0.0.1", "port": 29400},
        ),
        (
            [
                "python",
                "-m",
                "torch.distributed.run",
                "--nnodes=2",
                "--node_rank=1",
                "--master_addr=h0",
                "t.py",
            ],
            {},
            {},
            {"launcher": "torchrun", "nodes": 2, "rank": 1, "master": "h0"},
        ),
        (
            ["vllm", "serve", "m", "-tp", "2"],
            {"NNODES": "2", "VLLM_HOST_IP": "10.0.0.2"},
            {},
            {"launcher": "vllm", "nodes": 2, "tp": 2},
        ),
        (
            [
                "python",
                "-m",
                "sglang.launch_server",
                "--tp-size",
                "2",
                "--nnodes",
                "2",
                "--node-rank",
                "1",
                "--dist-init-addr",
                "10.0.0.1:5000",
            ],
            {},
            {},
            {"launcher": "sglang", "nodes": 2, "rank": 1, "tp": 2, "master": "10.0.0.1", "port": 5000},
        ),
        (
            ["deepspeed", "--num_nodes", "2", "--master_addr", "10.0.0.1", "--master_port", "29600", "t.py"],
            {},
            {},
            {"launcher": "deepspeed", "nodes": 2, "master": "10.0.0.1", "port": 29600},
        ),
        (
            [
                "accelerate",
                "launch",
                "--num_machines",
                "2",
                "--machine_rank",
                "1",
                "--main_process_ip",
                "10.0.0.1",
                "t.py",
            ],
            {"PARALLELISM_CONFIG_TP_SIZE": "2"},
            {},
            {"launcher": "accelerate", "nodes": 2, "rank": 1, "tp": 2, "master": "10.0.0.1"},
        ),
        (
            ["accelerate", "launch", "t.py"],
            {},
            {
                "accelerate": {
                    "path": "c.yaml",
                    "data": {
                        "num_machines": 2,
                        "machine_rank": 0,
                        "main_process_ip": "10.0.0.1",
                        "main_process_port": 29500,
                        "parallelism_config": {"parallelism_config_tp_size": 2},
                    },
                }
            },
            {"nodes": 2, "rank": 0, "tp": 2, "master": "10.0.0.1", "port": 29500},
        ),
        (
            ["python", "t.py"],
            {"WORLD_SIZE": "4", "LOCAL_WORLD_SIZE": "2", "GROUP_RANK": "1", "LOCAL_RANK": "1"},
            {},
            {"nodes": 2, "rank": 1},
        ),
        (
            ["ray", "job", "submit", "--", "python", "t.py"],
            {"RAY_ADDRESS": "10.0.0.1:6379"},
            {},
            {"ray": True},
        ),
    ],
)
def test_launch_is_read_as_the_launcher_reads_it(workload, env, configs, expected):
    got = launch.read(workload, env, configs)
    seen = {
        "launcher": got.launcher,
        "nodes": got.nodes,
        "rank": got.node_rank,
        "tp": got.tp,
        "master": got.master_addr.value if got.master_addr else None,
        "port": got.master_port,
        "ray": got.ray,
    }
    assert {k: seen[k] for k in expected} == expected


def test_accelerate_yaml_is_read_with_a_real_yaml_parser(run, tmp_path):
    """`num_machines: 2   # two Sparks` is 2 (a comment, as PyYAML reads it); the nested tensor-parallel
    size of accelerate's parallelism_config counts."""
    cfg = tmp_path / "accelerate.yaml"
    cfg.write_text(
        "compute_environment: LOCAL_MACHINE\n"
        "distributed_type: FSDP\n"
        "num_machines: 2   # two Sparks\n"
        "machine_rank: 0\n"
        "main_process_ip: 127.0.0.1\n"
        "main_process_port: 29500\n"
        "parallelism_config:\n"
        "  parallelism_config_dp_shard_size: 1\n"
        "  parallelism_config_tp_size: 2\n"
    )
    # `true` with accelerate's arguments: read as the launch, harmless when exec'd after the checks
    r = run(
        "gate", "--deadline", "3", "--", "true", "accelerate", "launch", "--config_file", str(cfg), "t.py"
    )
    line = [ln for ln in r.err.splitlines() if ln.startswith("G10 ") and "tensor parallel" in ln]
    assert len(line) == 1, r.err
    # no GPU count here (no NVML): whether TP 2 crosses the link is unknown, never guessed (it was a FAIL
    # "taken as 1 GPU per node"); the two nodes of num_machines are read all the same
    assert line[0].startswith(
        "G10 INFO: tensor parallel size 2 across 2 nodes: whether it crosses the link is unknown"
    ), line


def test_broken_accelerate_yaml_is_one_warning_naming_it(run, tmp_path):
    cfg = tmp_path / "accelerate.yaml"
    cfg.write_text("num_machines: [2\n")
    r = run(
        "gate", "--deadline", "3", "--", "true", "accelerate", "launch", "--config_file", str(cfg), "t.py"
    )
    line = [ln for ln in r.err.splitlines() if ln.startswith("G10 ") and str(cfg) in ln]
    assert (
        len(line) == 1
        and line[0].startswith(f"G10 WARN: accelerate config {cfg} unreadable (")
        and "not YAML" in line[0]
    ), r.err

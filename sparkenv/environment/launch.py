"""What launch the workload intends, read the way its launcher reads it: node count, this node's rank,
the master address, tensor-parallel size. One reader for every stage that asks (the G10 checks, the
agreement probe). Sources per launcher: torchrun (`--nnodes`, `--node-rank`, `--master-addr`,
`--rdzv-endpoint`), accelerate (`--num_machines`, `--machine_rank`, `--main_process_ip`, its YAML
config, `parallelism_config_tp_size` / $PARALLELISM_CONFIG_TP_SIZE), DeepSpeed (`--num_nodes`,
`--master_addr`, its JSON `tensor_parallel`), vLLM / SGLang (`--tensor-parallel-size`/`-tp`, `--tp-size`,
`--nnodes`, `--node-rank`, `--dist-init-addr`, $VLLM_HOST_IP), Ray (`$RAY_ADDRESS`, `ray start`)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from sparkenv.environment import parsers

LAUNCHERS = ("torchrun", "torch.distributed.run", "accelerate", "deepspeed", "vllm", "sglang", "ray")


@dataclass(frozen=True)
class Setting:
    value: str
    source: str  # "workload --nnodes 2", "NNODES=2", "accelerate config.yaml num_machines"

    def __str__(self) -> str:
        return self.source


@dataclass(frozen=True)
class Launch:
    launcher: str | None
    nodes: int
    nodes_from: Setting | None
    node_rank: int | None
    rank_from: Setting | None
    master_addr: Setting | None
    master_port: int | None
    tp: int
    tp_from: Setting | None
    local_rank: int | None
    ray: bool
    advertised: tuple[Setting, ...] = field(default_factory=tuple)  # addresses this node tells peers

    @property
    def multi_node(self) -> bool:
        return self.nodes > 1


def _int(value: Any) -> int | None:
    try:
        return int(str(value).strip())
    except (TypeError, ValueError):
        return None


def _get(data: Any, *path: str) -> Any:
    for key in path:
        if not isinstance(data, dict):
            return None
        data = data.get(key)
    return data


def launcher(workload: Sequence[str]) -> str | None:
    """The launcher named in the workload's first words (after NGC's entrypoint script, `python -m`)."""
    for word in workload[:6]:
        base = word.rsplit("/", 1)[-1]
        for name in LAUNCHERS:
            if (
                base == name
                or base.startswith(f"{name}.")
                or (name == "torchrun" and base == "torch.distributed.run")
            ):
                return "torchrun" if name == "torch.distributed.run" else name
    return None


def _opt(workload: Sequence[str], *names: str) -> Setting | None:
    for name in names:
        value = parsers.option_value(list(workload), (name,))
        if value is not None:
            return Setting(value, f"workload {name} {value}")
    return None


def _env(env: Mapping[str, str], *keys: str) -> Setting | None:
    for key in keys:
        if env.get(key, "").strip():
            return Setting(env[key].strip(), f"{key}={env[key].strip()}")
    return None


def _conf(configs: Mapping[str, Any], which: str, *path: str) -> Setting | None:
    entry = configs.get(which) or {}
    value = _get(entry.get("data"), *path)
    if value is None or isinstance(value, (dict, list)):
        return None
    return Setting(str(value), f"{which} {entry.get('path', 'config')} {'.'.join(path)}={value}")


def read(workload: Sequence[str], env: Mapping[str, str], configs: Mapping[str, Any] | None = None) -> Launch:
    configs = configs or {}
    nodes, nodes_s = _nodes(workload, env, configs)
    rank_s = (
        _opt(workload, "--node-rank", "--node_rank", "--machine_rank", "--machine-rank")
        or _env(env, "NODE_RANK", "GROUP_RANK", "PET_NODE_RANK")
        or _conf(configs, "accelerate", "machine_rank")
    )
    addr_s, port = _master(workload, env, configs)
    tp_s = _tp(workload, env, configs)
    advertised = tuple(
        s
        for s in (
            addr_s,
            _env(env, "VLLM_HOST_IP"),
            _env(env, "SGLANG_HOST_IP"),
            _opt(workload, "--node-ip-address"),
        )
        if s
    )
    which = launcher(workload)
    ray = (
        bool(env.get("RAY_ADDRESS"))
        or which == "ray"
        or (parsers.option_value(list(workload), ("--distributed-executor-backend",)) == "ray")
    )
    return Launch(
        launcher=which,
        nodes=nodes,
        nodes_from=nodes_s,
        node_rank=_int(rank_s.value) if rank_s else None,
        rank_from=rank_s,
        master_addr=addr_s,
        master_port=port,
        tp=(_int(tp_s.value) or 1) if tp_s else 1,
        tp_from=tp_s,
        local_rank=_int(env.get("LOCAL_RANK")),
        ray=ray,
        advertised=advertised,
    )


def _nodes(
    workload: Sequence[str], env: Mapping[str, str], configs: Mapping[str, Any]
) -> tuple[int, Setting | None]:
    """How many nodes, and where that was read; WORLD_SIZE / LOCAL_WORLD_SIZE when nothing names it."""
    nodes_s = (
        _opt(workload, "--nnodes", "--num_machines", "--num-machines", "--num_nodes", "--num-nodes")
        or _env(env, "NNODES", "PET_NNODES")
        or _conf(configs, "accelerate", "num_machines")
    )
    if nodes_s:
        return _int(nodes_s.value.split(":")[-1]) or 1, nodes_s  # torchrun's elastic MIN:MAX: the most
    world, local = _int(env.get("WORLD_SIZE")), _int(env.get("LOCAL_WORLD_SIZE"))
    if world and local:
        nodes = max(1, world // local)
        return nodes, Setting(str(nodes), f"WORLD_SIZE={world} / LOCAL_WORLD_SIZE={local}")
    return 1, None


def _master(
    workload: Sequence[str], env: Mapping[str, str], configs: Mapping[str, Any]
) -> tuple[Setting | None, int | None]:
    """The master address (a HOST:PORT one split) and port."""
    addr_s = (
        _opt(workload, "--master-addr", "--master_addr", "--main_process_ip", "--main-process-ip")
        or _endpoint(workload)
        or _env(env, "MASTER_ADDR", "PET_MASTER_ADDR")
        or _conf(configs, "accelerate", "main_process_ip")
    )
    port_s = (
        _opt(workload, "--master-port", "--master_port", "--main_process_port", "--main-process-port")
        or _env(env, "MASTER_PORT", "PET_MASTER_PORT")
        or _conf(configs, "accelerate", "main_process_port")
    )
    port = _int(port_s.value) if port_s else None
    if addr_s and ":" in addr_s.value and addr_s.value.count(":") == 1:
        host, _, p = addr_s.value.partition(":")
        port = port or _int(p)
        addr_s = Setting(host, addr_s.source)
    return addr_s, port


def _tp(workload: Sequence[str], env: Mapping[str, str], configs: Mapping[str, Any]) -> Setting | None:
    """The tensor-parallel size as vLLM, SGLang, accelerate and DeepSpeed spell it."""
    return (
        _opt(
            workload,
            "--tensor-parallel-size",
            "--tensor_parallel_size",
            "-tp",
            "--tp-size",
            "--tp_size",
            "--tp",
            "--parallelism_config_tp_size",
            "--parallelism-config-tp-size",
        )
        or _env(env, "PARALLELISM_CONFIG_TP_SIZE", "TP_SIZE", "TENSOR_PARALLEL_SIZE")
        or _conf(configs, "accelerate", "parallelism_config", "parallelism_config_tp_size")
        or _conf(configs, "accelerate", "parallelism_config_tp_size")
        or _conf(configs, "accelerate", "tp_size")
        or _conf(configs, "deepspeed", "tensor_parallel", "autotp_size")
        or _conf(configs, "deepspeed", "tensor_parallel", "tp_size")
    )


def _endpoint(workload: Sequence[str]) -> Setting | None:
    """torchrun --rdzv-endpoint HOST:PORT, SGLang --dist-init-addr HOST:PORT."""
    return _opt(workload, "--rdzv-endpoint", "--rdzv_endpoint", "--dist-init-addr", "--dist_init_addr")

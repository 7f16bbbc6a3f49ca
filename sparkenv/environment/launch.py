"""What launch the workload intends, read the way its launcher reads it: node count, this node's rank,
the master address, tensor-parallel size. One reader for every stage that asks (the G10 checks, the
agreement probe). Sources per launcher: torchrun (`--nnodes`, `--node-rank`, `--master-addr`,
`--rdzv-endpoint`), accelerate (`--num_machines`, `--machine_rank`, `--main_process_ip`, its YAML
config, `parallelism_config_tp_size` / $PARALLELISM_CONFIG_TP_SIZE), DeepSpeed (`--num_nodes`,
`--master_addr`, its JSON `tensor_parallel`), vLLM / SGLang (`--tensor-parallel-size`/`-tp`, `--tp-size`,
`--nnodes`, `--node-rank`, `--dist-init-addr`, $VLLM_HOST_IP, `--pipeline-parallel-size`/`-pp`, `--pp-size`,
their `--config` YAML), TensorRT-LLM (`trtllm-serve --tp_size --pp_size`, its `--extra_llm_api_options`
YAML), Megatron-style trainers (`--tensor-model-parallel-size`, `--pipeline-model-parallel-size`), Ray
(`$RAY_ADDRESS`, `ray start --head`, `ray start --address`, `--distributed-executor-backend ray`)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from sparkenv.environment import parsers
from sparkenv.environment.servers import identify

LAUNCHERS = (
    "torchrun",
    "torch.distributed.run",
    "accelerate",
    "deepspeed",
    "vllm",
    "sglang",
    "trtllm",
    "ray",
)
TP_OPTIONS = (
    "--tensor-parallel-size",
    "-tp",
    "--tp-size",
    "--tp",
    "--parallelism-config-tp-size",
    "--tensor-model-parallel-size",  # Megatron-LM / NeMo trainers
)
PP_OPTIONS = ("--pipeline-parallel-size", "-pp", "--pp-size", "--pp", "--pipeline-model-parallel-size")
# Launchers' YAML configs (read by gate/probes.py into `configs`) spell the sizes either way.
TP_KEYS = ("tensor_parallel_size", "tensor-parallel-size", "tp_size", "tp-size")
PP_KEYS = ("pipeline_parallel_size", "pipeline-parallel-size", "pp_size", "pp-size")


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
    master_addr: Setting | None
    master_port: int | None
    tp: int
    tp_from: Setting | None
    local_rank: int | None
    ray: bool
    advertised: tuple[Setting, ...] = field(default_factory=tuple)  # addresses this node tells peers
    pp: int = 1
    pp_from: Setting | None = None
    # Ray: "head" (`ray start --head`), "join" (`ray start --address`), "driver" (a workload that
    # connects to a cluster: $RAY_ADDRESS, `--distributed-executor-backend ray`), "client" (`ray job
    # submit`: the job runs on the cluster's nodes, not here); None without Ray.
    ray_role: str | None = None
    ray_address: Setting | None = None  # the cluster's GCS address (`ray start --address`, $RAY_ADDRESS)
    serving: bool = False  # an inference server (data/servers.toml), not a trainer

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
                or base.startswith((f"{name}.", f"{name}-"))
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
    tp_s = _tensor_parallel(workload, env, configs)
    pp_s = (
        _opt(workload, *PP_OPTIONS)
        or _env(env, "PIPELINE_PARALLEL_SIZE", "PP_SIZE")
        or _confs(configs, ("vllm", "sglang", "trtllm"), PP_KEYS)
    )
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
    role, ray_address = _ray(workload, env, which)
    if role == "join" and nodes < 2 and ray_address:
        nodes, nodes_s = 2, Setting("2", f"{ray_address.source} (joins a cluster: at least 2 nodes)")
    return Launch(
        launcher=which,
        nodes=nodes,
        nodes_from=nodes_s,
        node_rank=_int(rank_s.value) if rank_s else None,
        master_addr=addr_s,
        master_port=port,
        tp=(_int(tp_s.value) or 1) if tp_s else 1,
        tp_from=tp_s,
        local_rank=_int(env.get("LOCAL_RANK")),
        ray=role is not None,
        advertised=advertised,
        pp=(_int(pp_s.value) or 1) if pp_s else 1,
        pp_from=pp_s,
        ray_role=role,
        ray_address=ray_address,
        serving=serving(workload),
    )


def _nodes(
    workload: Sequence[str], env: Mapping[str, str], configs: Mapping[str, Any]
) -> tuple[int, Setting | None]:
    """How many nodes the launch spans, and where that was said (1, from nowhere, when nothing says)."""
    nodes_s = (
        _opt(workload, "--nnodes", "--num_machines", "--num-machines", "--num_nodes", "--num-nodes")
        or _env(env, "NNODES", "PET_NNODES")
        or _conf(configs, "accelerate", "num_machines")
    )
    if nodes_s:  # torchrun's elastic MIN:MAX: the most it will wait for
        return _int(nodes_s.value.split(":")[-1]) or 1, nodes_s
    if hosts := _mpi_hosts(workload):  # mpirun -H spark-a,spark-b … (TensorRT-LLM's multi-node launch)
        return len(hosts), Setting(str(len(hosts)), f"workload mpirun hosts {','.join(hosts)}")
    world, local = _int(env.get("WORLD_SIZE")), _int(env.get("LOCAL_WORLD_SIZE"))
    if world and local:
        nodes = max(1, world // local)
        return nodes, Setting(str(nodes), f"WORLD_SIZE={world} / LOCAL_WORLD_SIZE={local}")
    return 1, None


def _master(
    workload: Sequence[str], env: Mapping[str, str], configs: Mapping[str, Any]
) -> tuple[Setting | None, int | None]:
    """The master address (without a port written into it) and the master port."""
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


def _tensor_parallel(
    workload: Sequence[str], env: Mapping[str, str], configs: Mapping[str, Any]
) -> Setting | None:
    return (
        _opt(workload, *TP_OPTIONS)
        or _env(env, "PARALLELISM_CONFIG_TP_SIZE", "TP_SIZE", "TENSOR_PARALLEL_SIZE")
        or _conf(configs, "accelerate", "parallelism_config", "parallelism_config_tp_size")
        or _conf(configs, "accelerate", "parallelism_config_tp_size")
        or _conf(configs, "accelerate", "tp_size")
        or _conf(configs, "deepspeed", "tensor_parallel", "autotp_size")
        or _conf(configs, "deepspeed", "tensor_parallel", "tp_size")
        or _confs(configs, ("vllm", "sglang", "trtllm"), TP_KEYS)
    )


def _mpi_hosts(workload: Sequence[str]) -> list[str]:
    """The distinct hosts of `mpirun -H a,b` / `--host a:1,b:1` (slots after the colon)."""
    if not workload or not workload[0].rsplit("/", 1)[-1].startswith(("mpirun", "mpiexec")):
        return []
    value = parsers.option_value(list(workload), ("-H", "--host"))
    hosts = [h.split(":")[0] for h in (value or "").split(",") if h.strip()]
    return list(dict.fromkeys(hosts))


def _confs(configs: Mapping[str, Any], which: tuple[str, ...], keys: tuple[str, ...]) -> Setting | None:
    for name in which:
        for key in keys:
            found = _conf(configs, name, key)
            if found:
                return found
    return None


def _ray(
    workload: Sequence[str], env: Mapping[str, str], which: str | None
) -> tuple[str | None, Setting | None]:
    """This node's part in a Ray cluster, and the cluster's address."""
    words = list(workload)
    env_addr = _env(env, "RAY_ADDRESS")
    if which == "ray" and "start" in words[:8]:
        if "--head" in words:
            return "head", None
        return "join", _opt(words, "--address") or env_addr
    if which == "ray":  # `ray job submit …`, `ray status`: a client of the cluster, not one of its nodes
        return "client", env_addr
    backend = parsers.option_value(words, ("--distributed-executor-backend",))
    if env_addr or which == "ray" or backend == "ray":
        return "driver", env_addr
    return None, None


def serving(workload: Sequence[str]) -> bool:
    """An inference server (data/servers.toml), also behind a wrapper (`mpirun -n 2 trtllm-llmapi-launch
    trtllm-serve …`, NGC's entrypoint script)."""
    words = list(workload)
    return any(identify(words[i:]) is not None for i in range(min(len(words), 8)))


def _endpoint(workload: Sequence[str]) -> Setting | None:
    """torchrun --rdzv-endpoint HOST:PORT, SGLang --dist-init-addr HOST:PORT."""
    return _opt(workload, "--rdzv-endpoint", "--rdzv_endpoint", "--dist-init-addr", "--dist_init_addr")

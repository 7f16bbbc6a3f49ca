"""G10 live: tensor parallelism across two Sparks: training → FAIL, inference → WARN."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from sparkenv.gate import parsers
from sparkenv.gate.servers import identify
from sparkenv.report import Finding, Status
from sparkenv.rules import Rule, Stage

if TYPE_CHECKING:
    from sparkenv.gate.view import GateFacts


def live(f: GateFacts) -> list[Finding]:
    return _parallelism(f) + _known_hosts(f)


def _parallelism(f: GateFacts) -> list[Finding]:
    nodes, nodes_from = _nodes(f)
    tp, tp_from = _tp(f)
    evidence = tuple(x for x in (nodes_from, tp_from) if x)
    inference = identify(f.workload) is not None
    kind = "inference" if inference else "training"
    if nodes <= 1:
        text = f"single node{f', tensor parallel size {tp}' if tp > 1 else ''}: nothing crosses the link"
        return [Finding("G10", Status.PASS, text, "parallelism", evidence)]
    if tp <= 1:
        return [
            Finding(
                "G10",
                Status.PASS,
                f"{nodes} nodes without tensor parallelism (DDP/FSDP): fits ConnectX-7",
                "parallelism",
                evidence,
            )
        ]
    text = f"{kind} with tensor parallel size {tp} across {nodes} nodes"
    if inference:
        return [
            Finding(
                "G10",
                Status.WARN,
                f"{text}: NVIDIA's serving playbooks do it, but expect it to be slow",
                "parallelism",
                evidence,
                "prefer one model per Spark, or pipeline parallelism across nodes",
            )
        ]
    return [
        Finding(
            "G10",
            Status.FAIL,
            f"{text}: TP traffic is too fine-grained for the link, runs hang or crawl",
            "parallelism",
            evidence,
            "train with DDP or FSDP across Sparks; keep TP inside one node",
        )
    ]


def _int(value: Any) -> int | None:
    try:
        return int(str(value).strip())
    except (TypeError, ValueError):
        return None


def _nodes(f: GateFacts) -> tuple[int, str | None]:
    arg = parsers.option_value(f.workload, ("--nnodes", "--num_machines", "--num-nodes"))
    if arg and _int(arg.split(":")[-1]):
        return _int(arg.split(":")[-1]) or 1, f"workload {arg} nodes"
    if _int(f.env.get("NNODES")):
        return _int(f.env["NNODES"]) or 1, f"NNODES={f.env['NNODES']}"
    accel = ((f.section("configs") or {}).get("accelerate") or {}).get("data") or {}
    if _int(accel.get("num_machines")):
        return _int(accel["num_machines"]) or 1, f"accelerate num_machines={accel['num_machines']}"
    world, local = _int(f.env.get("WORLD_SIZE")), _int(f.env.get("LOCAL_WORLD_SIZE"))
    if world and local:
        return max(1, world // local), f"WORLD_SIZE={world} / LOCAL_WORLD_SIZE={local}"
    return 1, None


def _tp(f: GateFacts) -> tuple[int, str | None]:
    arg = parsers.option_value(
        f.workload, ("--tensor-parallel-size", "--tp-size", "--tp", "--tensor_parallel_size")
    )
    if _int(arg):
        return _int(arg) or 1, f"workload tensor parallel {arg}"
    for key in ("TP_SIZE", "TENSOR_PARALLEL_SIZE"):
        if _int(f.env.get(key)):
            return _int(f.env[key]) or 1, f"{key}={f.env[key]}"
    configs = f.section("configs") or {}
    accel = (configs.get("accelerate") or {}).get("data") or {}
    for key in ("tp_size", "tensor_parallel_size"):
        if _int(accel.get(key)):
            return _int(accel[key]) or 1, f"accelerate {key}={accel[key]}"
    ds = (configs.get("deepspeed") or {}).get("data") or {}
    tp_section = ds.get("tensor_parallel") or {}
    size = (
        tp_section.get("autotp_size") or tp_section.get("tp_size") if isinstance(tp_section, dict) else None
    )
    if _int(size):
        return _int(size) or 1, f"deepspeed tensor_parallel={size}"
    return 1, None


def _known_hosts(f: GateFacts) -> list[Finding]:
    """Kernel builds and settings users reported broken on DGX Spark that break the link between Sparks
    (data/hosts.toml): WARN on one node, FAIL when the workload spans nodes."""
    from sparkenv.cuda import hosts

    nodes, _ = _nodes(f)
    kernel = (f.raw.get("host") or {}).get("kernel")
    found = hosts.judge(kernel, f.section("meminfo"), f.driver_version, f.env.get("CUDA_VERSION"), nodes > 1)
    return [x for x in found if x.id == "G10"]


RULES = (
    Rule(
        Stage.LIVE,
        live,
        "the workload's launcher arguments and accelerate/DeepSpeed settings: node count and "
        "tensor parallelism across Sparks; the running kernel build and /proc/meminfo against known-bad "
        "hosts (data/hosts.toml, dated: CmaTotal 0 kB breaks RDMA registration)",
    ),
)

"""G10 live: tensor and pipeline parallelism against the node's GPUs (rules/parallelism.py: training with
TP across Sparks → FAIL, serving → WARN); for a multi-node
launch, this node's link and NCCL settings (rules/g10_link.py), the agreement of all nodes and the
optional link test (rules/g10_agreement.py). The launch itself is read once, as the launchers read it
(sparkenv/environment/launch.py)."""

from __future__ import annotations

from functools import partial
from typing import TYPE_CHECKING

from sparkenv.core.report import Finding, GotchaId, Status
from sparkenv.environment import launch, nccl
from sparkenv.facts.parallelism import Parallelism
from sparkenv.rules import Lazy, Rule, Stage, g10_agreement, g10_link, parallelism, run_rule

if TYPE_CHECKING:
    from sparkenv.facts.live import GateFacts

_finding = partial(Finding, GotchaId.G10)  # every finding of this module is G10's


def _plan(f: GateFacts) -> launch.Launch:
    return launch.read(f.workload, f.env, f.section("configs") or {})


def live(f: GateFacts) -> list[Finding]:
    """The three parts, each isolated like a rule: a crash in one is its own ERROR line, the others stand."""

    out: list[Finding] = []
    for part in PARTS:
        out += run_rule(GotchaId.G10, part, f)
    return out


def live_parallelism(f: GateFacts) -> list[Finding]:
    """Tensor parallelism across nodes, and launcher configs that could not be read."""
    plan = _plan(f)
    findings = _parallelism(f, plan)
    for which, entry in sorted((f.section("configs") or {}).items()):
        if isinstance(entry, dict) and entry.get("error"):
            findings.append(
                _finding(
                    status=Status.WARN,
                    summary=f"{which} config {entry.get('path')} unreadable ({entry['error']}): its node "
                    "count and tensor-parallel size were not read",
                    subject=f"config:{entry.get('path')}",
                    fix=f"repair or remove {entry.get('path')} ({which} reads it at launch, as the gate "
                    "did), then run the gate again",
                )
            )
    return findings


def _section(f: GateFacts, plan: launch.Launch) -> tuple[dict | None, list[Finding]]:
    """The multinode probe's answer, or the one line saying why there is none."""
    if not plan.multi_node and not (f.section("multinode") or {}).get("multi_node"):
        return None, []  # a Ray workload counts as multi-node when its cluster has more than one node
    if f.probe_error("multinode") is not None:
        err = f.error_finding(GotchaId.G10, "multinode", "link")
        return None, [err] if err else []
    section = f.section("multinode") or {}
    if not section.get("multi_node"):
        return None, [
            _finding(
                status=Status.INFO,
                summary="link and agreement not checked: the snapshot has no link facts",
                subject="link",
            )
        ]
    return section, []


def live_link(f: GateFacts) -> list[Finding]:
    plan = _plan(f)
    section, early = _section(f, plan)
    if section is None:
        return early
    settings = nccl.effective(section.get("nccl_env") or {}, section.get("nccl_confs") or [])
    out = g10_link.check(section["link"], settings, plan, f.is_gb10, section.get("resolved") or {})
    for conf in section.get("nccl_confs") or []:
        keys = sorted(conf.get("settings") or {})
        if conf.get("error"):
            out.append(
                _finding(
                    status=Status.ERROR,
                    summary=f"{conf['path']} cannot be read ({conf['error']}): the NCCL settings above may "
                    "not be what NCCL uses",
                    subject=f"nccl.conf:{conf['path']}",
                    fix=f"make {conf['path']} a regular, readable file, or remove it",
                )
            )
        elif keys:
            out.append(
                _finding(
                    status=Status.INFO,
                    summary=f"{conf['path']} sets {', '.join(keys)} (the environment overrides it)",
                    subject=f"nccl.conf:{conf['path']}",
                    evidence=tuple(f"{k}={v}" for k, v in sorted(conf["settings"].items())),
                )
            )
    return out


def live_agreement(f: GateFacts) -> list[Finding]:
    plan = _plan(f)
    strict = f.strict and bool(f.workload)  # in front of a workload under --policy strict: not agreed blocks
    section, _ = _section(f, plan)  # the reason for no section is said once, by live_link
    if section is None:
        # A Ray workload whose cluster could not be asked (RAY_ADDRESS of a head that is down): say so.
        asked = (f.section("multinode") or {}).get("agreement") or {}
        return g10_agreement.check(asked, plan.nodes, strict) if asked.get("error") else []
    agreement = section.get("agreement") or {}
    return g10_agreement.check(agreement, int(agreement.get("nodes") or plan.nodes), strict)


def live_known_hosts(f: GateFacts) -> list[Finding]:
    """Kernel builds and settings users reported broken on DGX Spark that break the link between Sparks
    (data/hosts.toml): WARN on one node, FAIL when the workload spans nodes."""
    from sparkenv.rules import hosts

    nodes = _plan(f).nodes
    kernel = (f.raw.get("host") or {}).get("kernel")
    found = hosts.judge(kernel, f.section("meminfo"), f.driver_version, f.env.get("CUDA_VERSION"), nodes > 1)
    return [x for x in found if x.id == GotchaId.G10]


FLAGS = {
    "sglang": ("--tp-size", "--pp-size"),
    "trtllm": ("--tp_size", "--pp_size"),
}


def _local_gpus(f: GateFacts) -> int | None:
    """NVML's GPU count on this node; None when NVML gave none (no driver, a CPU machine)."""
    if f.probe_error(f.gpu_probe):
        return None
    return len(f.gpu_readings.get("gpus") or []) or None


def _measured_gbs(f: GateFacts) -> float | None:
    """The NCCL bus bandwidth --link-test measured between the nodes (gloo's TCP figure is not the link's)."""
    test = ((f.section("multinode") or {}).get("agreement") or {}).get("link_test") or {}
    return test.get("busbw_gbs") if test.get("backend") == "nccl" and not test.get("error") else None


def _parallelism(f: GateFacts, plan: launch.Launch) -> list[Finding]:
    cluster = ((f.section("multinode") or {}).get("agreement") or {}).get("cluster") or {}
    nodes = max(plan.nodes, int(cluster.get("alive") or 0))
    evidence = [str(x) for x in (plan.nodes_from, plan.tp_from, plan.pp_from) if x]
    if cluster.get("alive"):
        evidence.append(f"Ray cluster: {cluster['alive']} node(s) alive")
    facts = Parallelism(
        tp=plan.tp,
        pp=plan.pp,
        nodes=nodes,
        local_gpus=_local_gpus(f),
        serving=plan.serving,
        ray=plan.ray,
        spark=f.is_gb10,
        link_gbs=_measured_gbs(f),
        evidence=tuple(evidence),
        flags=FLAGS.get(plan.launcher or "", ("--tensor-parallel-size", "--pipeline-parallel-size")),
    )
    return [parallelism.judge(facts)]


PARTS = (
    Rule(Stage.LIVE, live_parallelism, "tensor parallelism across Sparks"),
    Rule(Stage.LIVE, live_link, "this node's link"),
    Rule(Stage.LIVE, live_agreement, "agreement of the nodes"),
    Rule(Stage.LIVE, live_known_hosts, "known-bad hosts"),
)

RULES = (
    Rule(
        Stage.HOST,
        Lazy("host_system", "g10"),
        "CmaTotal in /proc/meminfo (RDMA registration between two Sparks) and the G10 entries of "
        "data/hosts.toml",
    ),
    Rule(
        Stage.LIVE,
        live,
        "node count, node rank, master address, tensor- and pipeline-parallel sizes as torchrun (Megatron "
        "arguments), accelerate (its YAML config, parallelism_config_tp_size, $PARALLELISM_CONFIG_TP_SIZE), "
        "DeepSpeed, vLLM, SGLang (their --config YAML), TensorRT-LLM (mpirun hosts, its YAML) and Ray read "
        "them, against the GPUs NVML counts on this node and the Ray cluster's nodes (TP across Sparks: "
        "training FAIL, serving WARN naming the link's bandwidth and PP across nodes with TP within); for a "
        "multi-node launch, this node's link: RDMA ports "
        "(state, rate, MTU, GID table) from /sys/class/infiniband and /sys/class/net, NCCL settings from the "
        "environment and nccl.conf files (NCCL_IB_HCA naming both halves of the port, a RoCE v2 "
        "NCCL_IB_GID_INDEX, NCCL_SOCKET_IFNAME), the address the launcher advertises against the interface "
        "that carries the link; and every node's digest (sparkenv, image as $SPARKENV_IMAGE, lock hash, "
        "driver, CUDA, torch, NCCL, Python, GPU, NCCL settings) exchanged through a torch.distributed "
        "TCPStore at the job's master address (MASTER_PORT + 17), or under Ray through the cluster's "
        "internal key-value store, within --deadline: a difference is a FAIL naming node and field on every "
        "node; with --link-test, one timed all-reduce between the nodes (under Ray, between tasks placed one "
        "per node, beside Ray's object transfer); "
        "the running kernel build and /proc/meminfo against known-bad hosts (data/hosts.toml, dated: "
        "CmaTotal 0 kB breaks RDMA registration)",
    ),
)

"""G10 live: tensor parallelism across two Sparks (training → FAIL, inference → WARN); for a multi-node
launch, this node's link and NCCL settings, the agreement of all nodes, and the optional link test."""

from __future__ import annotations

from sparkenv.gate.servers import identify
from sparkenv.gate.view import GateFacts
from sparkenv.multinode import judge_agreement, judge_link, launch, nccl
from sparkenv.report import Finding, Status


def check(f: GateFacts) -> list[Finding]:
    plan = launch.read(f.workload, f.env, f.section("configs") or {})
    findings = _parallelism(f, plan)
    for which, entry in sorted((f.section("configs") or {}).items()):
        if isinstance(entry, dict) and entry.get("error"):
            findings.append(
                Finding(
                    "G10",
                    Status.WARN,
                    f"{which} config {entry.get('path')} unreadable ({entry['error']}): its node count and "
                    "tensor-parallel size were not read",
                    f"config:{entry.get('path')}",
                )
            )
    if plan.multi_node:
        findings += _multinode(f, plan)
    return findings


def _multinode(f: GateFacts, plan: launch.Launch) -> list[Finding]:
    if f.probe_error("multinode"):
        return [f.error_finding("G10", "multinode", "link")]  # type: ignore[list-item]
    section = f.section("multinode") or {}
    if not section.get("multi_node"):
        return [
            Finding(
                "G10", Status.INFO, "link and agreement not checked: the snapshot has no link facts", "link"
            )
        ]
    settings = nccl.effective(section.get("nccl_env") or {}, section.get("nccl_confs") or [])
    out = judge_link.check(section["link"], settings, plan, f.is_gb10, section.get("resolved") or {})
    for conf in section.get("nccl_confs") or []:
        keys = sorted(conf.get("settings") or {})
        if keys:
            out.append(
                Finding(
                    "G10",
                    Status.INFO,
                    f"{conf['path']} sets {', '.join(keys)} (the environment overrides it)",
                    f"nccl.conf:{conf['path']}",
                    tuple(f"{k}={v}" for k, v in sorted(conf["settings"].items())),
                )
            )
    return out + judge_agreement.check(section.get("agreement"), plan.nodes)


def _parallelism(f: GateFacts, plan: launch.Launch) -> list[Finding]:
    nodes, tp = plan.nodes, plan.tp
    evidence = tuple(str(x) for x in (plan.nodes_from, plan.tp_from) if x)
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

"""Run the gate: gather facts (or replay a snapshot), apply the ten checks, build the report."""

from __future__ import annotations

from typing import Any

from sparkenv import rules
from sparkenv.facts.live import GateFacts
from sparkenv.gate import facts_file
from sparkenv.gate.probes import Options, gather
from sparkenv.report import Finding, Report


def load_facts(path: str) -> dict[str, Any]:
    return facts_file.load(path)


def evaluate(
    raw: dict[str, Any], need_gb: float = 0.0, strict: bool = False
) -> tuple[list[Finding], GateFacts]:
    facts = GateFacts(raw, need_gb, strict)
    return rules.evaluate(rules.Stage.LIVE, facts), facts


def gate(
    opts: Options, facts_file: str | None = None, need_gb: float = 0.0, strict: bool = False
) -> tuple[Report, dict[str, Any]]:
    if facts_file:
        raw = load_facts(facts_file)
        if opts.workload:
            raw["workload"] = list(opts.workload)
        source = f"replayed from {facts_file}"
    else:
        raw = gather(opts)
        source = "live"
    findings, facts = evaluate(raw, need_gb, strict)
    report = Report("gate", facts.gpu_name or facts.platform, findings)
    report.context = {
        "platform": facts.platform,
        "gpu": facts.gpu_name,
        "capability": list(facts.capability) if facts.capability else None,
        "facts": source,
        "taken_at": raw.get("taken_at"),
        "gather_s": raw.get("gather_s"),
        "workload": facts.workload,
        "mode": "deep" if facts.deep else "static",
    }
    return report, raw

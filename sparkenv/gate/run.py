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


# The data files the live checks and the report read: loaded while the probes run. Only a head start:
# one missing here is loaded when a check asks for it, as before.
LIVE_DATA = ("cuda", "drivers", "hosts", "packages", "playbook_issues")


def prepare_checks() -> None:
    """While the probes run (the gate waits for NVML and its other forked probes): import the live
    checks' modules and the report's, and load their data files, so that the checks start at once when
    the facts are in. Any failure is left for the checks themselves to meet and report."""
    import importlib

    from sparkenv import knowledge

    try:
        for _gid, rule in rules.rules_for(rules.Stage.LIVE):
            importlib.import_module(rule.check.__module__)
        importlib.import_module("sparkenv.render.emit")
        for name in LIVE_DATA:
            getattr(knowledge, name)()
    except Exception:  # met again, and reported, where the checks run
        pass


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
        raw = gather(opts, meanwhile=prepare_checks)
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

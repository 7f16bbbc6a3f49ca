"""Run the audit: gather facts once, apply the pure checks, return a report."""

from __future__ import annotations

import time
from pathlib import Path

from sparkenv import rules
from sparkenv.audit import scan
from sparkenv.cuda import coverage
from sparkenv.environment import target
from sparkenv.facts.installed import AuditFacts
from sparkenv.lock import read as lockread
from sparkenv.report import Finding, Report
from sparkenv.rules import requirements


def audit(
    target_arg: str | None,
    lock: str | None = None,
    machine: str | None = None,
    root: str | None = None,
    gpu: coverage.Capability | str | None = "default",
) -> Report:
    """`gpu`: the capability kernels are judged for; "default" is the GB10; None skips G7 coverage."""
    started = time.perf_counter()
    resolved = target.resolve(target_arg, machine)
    pins = lockread.given(lock) if lock else None
    cap = coverage.gb10() if gpu == "default" else gpu
    facts = scan.gather(resolved, pins, Path(root) if root else Path("/"), cap)  # type: ignore[arg-type]
    report = Report("audit", resolved.description, evaluate(facts))
    report.context = {
        "read": f"{resolved.read_what()}: {len(facts.dists)} distributions, {facts.shared_object_count} "
        "shared objects",
        "machine": resolved.machine,
        "python": resolved.python_version,
        "site_dirs": [str(d) for d in resolved.site_dirs],
        "distributions": len(facts.dists),
        "shared_objects": facts.shared_object_count,
        # what pip check reports, machine-readable: one entry per unmet requirement (G9 names each)
        "broken_requirements": [b.as_dict() for b in requirements.find(facts)[0]],
        "gpu": coverage.cap_text(cap) if isinstance(cap, tuple) else None,
        "seconds": round(time.perf_counter() - started, 3),
    }
    return report


def evaluate(facts: AuditFacts) -> list[Finding]:
    return rules.evaluate(rules.Stage.INSTALLED, facts)

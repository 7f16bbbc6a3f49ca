"""Run the audit: gather facts once, apply the pure checks, return a report."""

from __future__ import annotations

import time
from pathlib import Path

from sparkenv.audit import cuda_binding, g1_cuda, g2_flash_attn, g9_container, g9_drift, g9_requirements, scan
from sparkenv.environment import lockpins, target
from sparkenv.report import Finding, Report, merge_by_subject


def audit(
    target_arg: str | None, lock: str | None = None, machine: str | None = None, root: str | None = None
) -> Report:
    started = time.perf_counter()
    resolved = target.resolve(target_arg, machine)
    pins = lockpins.read(lock) if lock else None
    facts = scan.gather(resolved, pins, Path(root) if root else Path("/"))
    requirement_findings, broken = g9_requirements.check(facts)
    report = Report(
        "audit", resolved.description, merge_by_subject([*evaluate(facts), *requirement_findings])
    )
    report.context = {
        "machine": resolved.machine,
        "python": resolved.python_version,
        "site_dirs": [str(d) for d in resolved.site_dirs],
        "distributions": len(facts.dists),
        "shared_objects": facts.shared_object_count,
        # what pip check reports, machine-readable: one entry per broken requirement
        "broken_requirements": [b.as_dict() for b in broken],
        "seconds": round(time.perf_counter() - started, 3),
    }
    return report


def evaluate(facts: scan.AuditFacts) -> list[Finding]:
    binds = cuda_binding.bindings(facts)
    return merge_by_subject(
        [
            *g1_cuda.check(facts, binds),
            *g2_flash_attn.check(facts, binds),
            *g9_container.check(facts),
            *g9_drift.check(facts),
        ]
    )

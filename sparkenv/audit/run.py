"""Run the audit: gather facts once, apply the pure checks, return a report.

An environment whose files have not changed since the last audit gets that audit's findings back from
the cache (audit/memo.py) without the rules, the ELF reader or the metadata parser being imported; a
changed one is read again where it changed and judged in full."""

from __future__ import annotations

import os
import sys
import time
from pathlib import Path
from typing import TYPE_CHECKING, Any

from sparkenv.audit import memo as memo_mod
from sparkenv.audit import ngc
from sparkenv.core.errors import SparkenvError
from sparkenv.core.report import Finding, GotchaId, Report, Status
from sparkenv.cuda import coverage
from sparkenv.environment import container, target
from sparkenv.facts.lock import Lock, ProfileOfLock
from sparkenv.knowledge import packages

if TYPE_CHECKING:
    from sparkenv.facts.installed import AuditFacts
    from sparkenv.render.options import ReportOptions


def audit(
    target_arg: str | None,
    lock: str | None = None,
    machine: str | None = None,
    root: str | None = None,
    gpu: Any = "default",
    cache: bool = True,
) -> Report:
    """`gpu`: the capability kernels are judged for; "default" is the GB10; None skips G7 coverage.
    `cache`: use and keep the audit's cache (sparkenv/audit/memo.py)."""
    started = time.perf_counter()
    resolved = target.resolve(target_arg, machine)
    if gpu == "default":
        gpu = coverage.gb10()
    root_path = Path(root) if root else Path("/")
    markers = (container.detect(root_path), ngc.detect(root_path))
    locked = _lock(lock)
    profile = _profile_of(locked) if locked is not None else None
    memo = None
    if cache:
        # the lock's profile as found now: a profile file edited since the last audit is a miss
        header = memo_mod.header(resolved, lock, root_path, gpu, (*markers, profile))
        memo = memo_mod.Memo.for_target(header, resolved.site_dirs)
        hit = memo.report_if_unchanged(list(resolved.site_dirs))
        report = _remembered(resolved.description, hit) if hit is not None else None
        if report is not None:
            report.context["seconds"] = round(time.perf_counter() - started, 3)
            return report
    report, facts = _judged(resolved, locked, profile, root_path, gpu, markers, memo)
    if memo is not None:
        _remember(memo, resolved, facts, report)
    report.context["cache"] = "miss" if memo is not None else "off"
    report.context["seconds"] = round(time.perf_counter() - started, 3)
    return report


def _lock(lock: str | None) -> Lock | None:
    """--lock as read (a pylock of any tool, or a requirements file); unreadable: exit 2 naming it."""
    if not lock:
        return None
    from sparkenv.lock import read as lockread

    return lockread.given(lock)


def _profile_of(locked: Lock) -> ProfileOfLock | None:
    """The profile a sparkenv lock records, found as `lock --check` and `build` find it; a lock whose
    profile is not here (an image keeps the lock, not the profile file) is said, not an error."""
    if not locked.sparkenv or not (locked.profile or locked.profile_file):
        return None
    from sparkenv.core import project
    from sparkenv.lock import profile as lockprofile

    try:
        prof = lockprofile.of_lock(locked)
    except SparkenvError as exc:
        return ProfileOfLock(locked.path, locked.profile_file or locked.profile, False, why=str(exc))
    shown = project.from_here(prof.file) if prof.file else prof.name
    return ProfileOfLock(locked.path, shown, True, lockprofile.changed(locked, prof))


def _judged(
    resolved: target.Target,
    locked: Lock | None,
    profile: ProfileOfLock | None,
    root: Path,
    gpu: Any,
    markers: Any,
    memo: Any,
) -> tuple[Report, AuditFacts]:
    from sparkenv.audit import scan

    def while_reading(dists: dict[str, Any]) -> None:
        # while workers read shared objects: the requirement check (the G9 rule and the context below
        # get its answer back) and the rules' imports (packaging's too: not before the workers start)
        from sparkenv import rules
        from sparkenv.rules import requirements

        requirements.check(resolved, {k: df.dist for k, df in dists.items()})
        rules.rules_for(rules.Stage.INSTALLED)

    facts = scan.gather(resolved, locked, root, gpu, memo=memo, markers=markers, while_reading=while_reading)
    facts.lock_profile = profile
    report = Report("audit", resolved.description, evaluate(facts))
    report.context = {
        "read": f"{resolved.read_what()}: {len(facts.dists)} distributions, {facts.shared_object_count} "
        "shared objects",
        "machine": resolved.machine,
        "python": resolved.python_version,
        "site_dirs": [str(d) for d in resolved.site_dirs],
        "distributions": len(facts.dists),
        "shared_objects": facts.shared_object_count,
        # what pip check reports, machine-readable: per distribution, its unmet requirements (G9 says each)
        "broken_requirements": _requirements().grouped(_requirements().find(facts)[0]),
        "gpu": coverage.cap_text(gpu) if isinstance(gpu, tuple) else None,
    }
    return report, facts


def _requirements() -> Any:
    from sparkenv.rules import requirements

    return requirements


def _remember(memo: memo_mod.Memo, resolved: target.Target, facts: AuditFacts, report: Report) -> None:

    from sparkenv.audit import scan
    from sparkenv.environment.distributions import metadata_names

    site_dirs = list(resolved.site_dirs)
    metas = []
    for site in site_dirs:
        names = metadata_names(site)
        metas += [] if not isinstance(names, list) else [str(site / n) for n in names]
    files = [str(site / packages().sdpa_override_pth) for site in site_dirs]
    for df in facts.dists.values():
        files += [os.path.join(str(df.dist.site_dir), rel) for rel in df.so_paths]
    files += scan.ptxas_paths(facts)
    if resolved.interpreter is not None:
        files.append(str(resolved.interpreter.parent.parent / "pyvenv.cfg"))  # the full Python version
    findings = [
        {
            "id": f.id.value,
            "status": f.status.value,
            "summary": f.summary,
            "subject": f.subject,
            "evidence": list(f.evidence),
            "fix": f.fix,
        }
        for f in report.findings
    ]
    context = {k: v for k, v in report.context.items() if k != "seconds"}
    memo.remember(metas, files, findings, context)
    memo.save()


def _remembered(description: str, hit: dict[str, Any]) -> Report | None:
    """The remembered report, or None when the entry does not have the shape written above."""
    try:
        findings = [
            Finding(
                GotchaId(f["id"]),
                Status(f["status"]),
                str(f["summary"]),
                str(f["subject"]),
                tuple(str(e) for e in f["evidence"]),
                None if f["fix"] is None else str(f["fix"]),
            )
            for f in hit["findings"]
        ]
    except (KeyError, TypeError, ValueError):
        return None
    report = Report("audit", description, findings)
    report.context = {**hit["context"], "cache": "hit"}
    return report


def evaluate(facts: AuditFacts) -> list[Finding]:
    from sparkenv import rules

    return rules.evaluate(rules.Stage.INSTALLED, facts)


def say_what_was_read(result: Report, reporting: ReportOptions) -> None:
    """First, on a terminal's stderr, which environment was read (stdout stays findings then the verdict;
    a captured stderr stays the one error line). The G1 INFO line and context.read say it too."""

    if not (reporting.quiet or reporting.machine_stdout) and sys.stderr.isatty():
        print(f"sparkenv audit: read {result.context['read']}", file=sys.stderr, flush=True)

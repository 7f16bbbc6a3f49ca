"""Findings, reports, verdicts and exit codes: the contract every command shares (DESIGN.md)."""

from __future__ import annotations

import enum
import re
from dataclasses import dataclass, field

from sparkenv.printable import printable

SCHEMA = "sparkenv.report/1"
LINE_RE = re.compile(r"^G(10|[1-9]) (PASS|FAIL|WARN|SKIP|INFO|ERROR): .+")


class Status(str, enum.Enum):
    PASS = "PASS"
    FAIL = "FAIL"
    WARN = "WARN"
    SKIP = "SKIP"
    INFO = "INFO"
    # The check itself could not run (probe crashed, file unreadable): never shown as PASS.
    ERROR = "ERROR"


# Lower sorts first: problems lead within each G-number.
_SEVERITY = {Status.FAIL: 0, Status.ERROR: 1, Status.WARN: 2, Status.INFO: 3, Status.SKIP: 4, Status.PASS: 5}


class Verdict(str, enum.Enum):
    READY = "ready"
    READY_WITH_WARNINGS = "ready-with-warnings"
    BLOCKED = "blocked"


@dataclass(frozen=True)
class Finding:
    id: str  # "G1" … "G10"
    status: Status
    summary: str
    subject: str  # a normalized distribution name, a file, a process or a setting
    evidence: tuple[str, ...] = ()
    fix: str | None = None

    def __post_init__(self) -> None:
        if not re.fullmatch(r"G(10|[1-9])", self.id):
            raise ValueError(f"not a gotcha id: {self.id!r}")
        # Names with undecodable bytes (`caf\xff.dist-info`) print escaped in text, JSON and JUnit alike.
        object.__setattr__(self, "summary", printable(self.summary))
        object.__setattr__(self, "subject", printable(self.subject))
        object.__setattr__(self, "evidence", tuple(printable(str(e)) for e in self.evidence))
        if self.fix is not None:
            object.__setattr__(self, "fix", printable(self.fix))

    @property
    def number(self) -> int:
        return int(self.id[1:])

    def sort_key(self) -> tuple[int, int, str]:
        return (self.number, _SEVERITY[self.status], self.subject)


def merge_by_subject(findings: list[Finding]) -> list[Finding]:
    """One finding per (G-number, subject), so a tool can act on each: the worst status wins, the rest
    is kept in the summary, evidence and fix."""
    merged: dict[tuple[str, str], Finding] = {}
    for f in findings:
        key = (f.id, f.subject)
        prev = merged.get(key)
        if prev is None:
            merged[key] = f
            continue
        first, second = sorted((prev, f), key=lambda x: _SEVERITY[x.status])
        fixes = [x for x in (first.fix, second.fix) if x]
        merged[key] = Finding(
            f.id,
            first.status,
            f"{first.summary}; {second.summary}",
            f.subject,
            first.evidence + tuple(e for e in second.evidence if e not in first.evidence),
            "; ".join(dict.fromkeys(fixes)) or None,
        )
    return list(merged.values())


@dataclass
class Report:
    command: str
    target: str
    findings: list[Finding]
    profile: str | None = None
    # Facts about the run worth keeping in JSON (python version, machine, counts …).
    context: dict[str, object] = field(default_factory=dict)

    def sorted_findings(self) -> list[Finding]:
        return sorted(self.findings, key=Finding.sort_key)

    def count(self, status: Status) -> int:
        return sum(1 for f in self.findings if f.status is status)

    @property
    def verdict(self) -> Verdict:
        if self.count(Status.FAIL):
            return Verdict.BLOCKED
        if self.count(Status.WARN) or self.count(Status.ERROR):
            return Verdict.READY_WITH_WARNINGS
        return Verdict.READY

    def exit_code(self, strict: bool = False) -> int:
        """0: no FAIL; 1: a FAIL, or under --strict a WARN or ERROR."""
        if self.verdict is Verdict.BLOCKED:
            return 1
        if strict and self.verdict is Verdict.READY_WITH_WARNINGS:
            return 1
        return 0

"""Findings, reports, verdicts and exit codes: the contract every command shares (DESIGN.md)."""

from __future__ import annotations

import enum
import re
from dataclasses import dataclass, field

from sparkenv.core.printable import printable

SCHEMA = "sparkenv.core.report/1"
# The commands that report, as report.schema.json names them (a test keeps the two equal).
COMMANDS = ("audit", "check", "lock", "build", "gate", "patch", "host", "attest")


class _Gotcha(str, enum.Enum):
    """A str mixin (not StrEnum: Python 3.10 is supported) whose str() and format() are the value, so
    text, JSON, JUnit and SARIF print `G1` on every Python, as the output contract says."""

    def __str__(self) -> str:
        return self.value

    def __format__(self, spec: str) -> str:
        return format(self.value, spec)

    @property
    def number(self) -> int:
        return int(self.value[1:])

    @classmethod
    def of(cls, number: int) -> GotchaId:
        """GotchaId.of(4) is G4; a number outside the catalogue is a ValueError."""
        return cls(f"G{number}")  # type: ignore[return-value]

    @classmethod
    def parse(cls, text: str) -> GotchaId | None:
        """What a user may type for a G-number: "G4", "g4" or "4" -> G4; None for anything else."""
        m = re.fullmatch(r"\s*[gG]?(\d+)\s*", text)
        return next((g for g in cls if m and g.number == int(m.group(1))), None)  # type: ignore[misc]

    @classmethod
    def span(cls) -> str:
        """ "G1 … G10": every G-number, for messages."""
        members = list(cls)
        return f"{members[0].value} … {members[-1].value}"


def _catalogue() -> list[str]:
    """The G-numbers in order, read from the catalogue (data/gotchas.toml): a gotcha added there is a
    GotchaId, a valid report id and a valid waiver id without another edit."""
    from sparkenv.core.datafiles import load

    return [k for k, v in load("gotchas").items() if isinstance(v, dict)]  # not `reviewed`, the file's date


# G1 … G10, from the catalogue. `GotchaId.G1` works as on a hand-written enum.
GotchaId = _Gotcha("GotchaId", [(k, k) for k in _catalogue()], module=__name__, qualname="GotchaId")  # type: ignore[misc]

# The one G-number pattern (no anchors, no groups): report lines, waivers, colour, and the JSON schema's
# "id" pattern (a test asserts the schema accepts exactly what this does).
GOTCHA_PATTERN = "G(?:" + "|".join(sorted((g.value[1:] for g in GotchaId), key=len, reverse=True)) + ")"
LINE_RE = re.compile(rf"^({GOTCHA_PATTERN}) (PASS|FAIL|WARN|SKIP|INFO|ERROR): .+")


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
    id: GotchaId  # a valid "G1" … "G10" string (a report or facts read back) becomes the enum
    status: Status
    summary: str
    subject: str  # a normalized distribution name, a file, a process or a setting
    evidence: tuple[str, ...] = ()
    fix: str | None = None

    def __post_init__(self) -> None:
        if not isinstance(self.id, GotchaId):
            try:
                object.__setattr__(self, "id", GotchaId(self.id))
            except ValueError:
                raise ValueError(f"not a gotcha id: {self.id!r}") from None
        # Names with undecodable bytes (`caf\xff.dist-info`) print escaped in text, JSON and JUnit alike.
        object.__setattr__(self, "summary", printable(self.summary))
        object.__setattr__(self, "subject", printable(self.subject))
        object.__setattr__(self, "evidence", tuple(printable(str(e)) for e in self.evidence))
        if self.fix is not None:
            object.__setattr__(self, "fix", printable(self.fix))

    @property
    def number(self) -> int:
        return self.id.number

    def sort_key(self) -> tuple[int, int, str]:
        return (self.number, _SEVERITY[self.status], self.subject)


def merge_by_subject(findings: list[Finding]) -> list[Finding]:
    """One finding per (G-number, subject), so a tool can act on each: the worst status wins, the rest
    is kept in the summary, evidence and fix (worst first, then in the order found; each evidence line
    and fix once). Linear in the number of findings: a METADATA with 50,000 Requires-Dist lines made
    the pairwise merge quadratic (over 60 s)."""
    groups: dict[tuple[GotchaId, str], list[Finding]] = {}
    for f in findings:
        groups.setdefault((f.id, f.subject), []).append(f)
    merged = []
    for (gid, subject), group in groups.items():
        if len(group) == 1:
            merged.append(group[0])
            continue
        ordered = sorted(group, key=lambda x: _SEVERITY[x.status])  # stable: found order within a status
        evidence = dict.fromkeys(e for x in ordered for e in x.evidence)
        fixes = dict.fromkeys(x.fix for x in ordered if x.fix)
        merged.append(
            Finding(
                id=gid,
                status=ordered[0].status,
                summary="; ".join(x.summary for x in ordered),
                subject=subject,
                evidence=tuple(evidence),
                fix="; ".join(fixes) or None,
            )
        )
    return merged


@dataclass
class Report:
    command: str
    target: str
    findings: list[Finding]
    profile: str | None = None
    # Facts about the run worth keeping in JSON (python version, machine, counts …).
    context: dict[str, object] = field(default_factory=dict)

    def __post_init__(self) -> None:
        if self.command not in COMMANDS:  # the shipped schema would reject the JSON
            raise ValueError(f"not a reporting command: {self.command!r}")

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


def parse_ids(values: list[str] | tuple[str, ...] | None, option: str) -> frozenset[GotchaId] | None:
    """`--select G4,G8` / `--ignore 4 --ignore g8` -> {"G4", "G8"}; None when the option was not given.
    A value that is not a G-number is a usage error naming the option (exit 2)."""
    if not values:
        return None
    from sparkenv.core.errors import SparkenvError

    found: set[GotchaId] = set()
    for value in values:
        for part in str(value).split(","):
            gid = GotchaId.parse(part)
            if gid is None:
                raise SparkenvError(
                    f"{option} {value}: {part.strip()!r} is not a G-number ({GotchaId.span()})"
                )
            found.add(gid)
    return frozenset(found)


def selected(
    report: Report, select: frozenset[GotchaId] | None, ignore: frozenset[GotchaId] | None
) -> Report:
    """The report with only the findings of the selected G-numbers (all, without --select) minus the
    ignored ones; the verdict and exit code follow what is left (as check-wheel-contents' codes)."""
    if select is None and not ignore:
        return report
    keep = [f for f in report.findings if (select is None or f.id in select) and f.id not in (ignore or ())]
    context = dict(report.context)
    if select is not None:
        context["select"] = [g.value for g in sorted(select, key=lambda g: g.number)]
    if ignore:
        context["ignore"] = [g.value for g in sorted(ignore, key=lambda g: g.number)]
    return Report(report.command, report.target, keep, report.profile, context)

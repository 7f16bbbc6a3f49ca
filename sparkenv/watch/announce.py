"""One G-line per condition while the run goes on: a (G-number, subject) is said when it first turns WARN
or FAIL, and again only if it gets worse; the numbers changing from one reading to the next are not a
new condition. No flooding, whatever the interval."""

from __future__ import annotations

from dataclasses import dataclass, field

from sparkenv.core.report import Finding, Status
from sparkenv.facts.timeseries import clock
from sparkenv.render.text import finding_line

LOUD = {Status.FAIL: 0, Status.ERROR: 1, Status.WARN: 2}


@dataclass
class Said:
    t: float
    finding: Finding


@dataclass
class Announcer:
    said: dict[tuple[str, str], Said] = field(default_factory=dict)

    def update(self, findings: list[Finding], t: float) -> list[tuple[Finding, str]]:
        """The findings to say now, each with its line (time since start after the status)."""
        out = []
        for f in findings:
            if f.status not in LOUD:
                continue
            key = (str(f.id), f.subject)
            before = self.said.get(key)
            if before is not None and LOUD[f.status] >= LOUD[before.finding.status]:
                continue
            self.said[key] = Said(t, f)
            out.append((f, line(f, t)))
        return out


def line(f: Finding, t: float) -> str:
    """`G4 WARN: +1:05 power pinned …`: a G-line as every command prints it, the time since start first."""
    text = finding_line(f)
    head, _, rest = text.partition(": ")
    return f"{head}: {clock(t)} {rest}"

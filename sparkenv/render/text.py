"""One line per finding, G-number first, then the verdict line."""

from __future__ import annotations

from sparkenv.core.printable import printable
from sparkenv.core.report import Finding, Report, Status

_QUIET_HIDDEN = {Status.PASS, Status.INFO, Status.SKIP}


def finding_line(finding: Finding) -> str:
    line = f"{finding.id} {finding.status.value}: {finding.summary}"
    if finding.fix and finding.status in (Status.FAIL, Status.WARN, Status.ERROR):
        line += f"; {finding.fix}"
    # A finding is one line by contract, whatever a file name or a message holds.
    return " ".join(line.split())


def render(report: Report, quiet: bool = False) -> str:
    lines = [finding_line(f) for f in report.sorted_findings() if not (quiet and f.status in _QUIET_HIDDEN)]
    counts = ", ".join(
        f"{report.count(s)} {s.value}" for s in (Status.FAIL, Status.ERROR, Status.WARN) if report.count(s)
    )
    if "platform" in report.context:
        lines.append(f"platform: {printable(str(report.context['platform']))}")
    if "interpreter" in report.context:  # the gate: whose torch and packages it judged
        lines.append(f"interpreter: {printable(str(report.context['interpreter']))}")
    lines.append(f"verdict: {report.verdict.value}" + (f" ({counts})" if counts else ""))
    return "\n".join(lines) + "\n"

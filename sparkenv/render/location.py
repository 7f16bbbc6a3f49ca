"""Where a finding points in the user's files: the first `path:line` (or existing path) in its evidence,
made relative to the working directory when it lies inside it (annotations and SARIF want repository
paths). Presentation only: no finding changes here."""

from __future__ import annotations

import os
import re
from dataclasses import dataclass
from pathlib import Path

from sparkenv.core.report import Finding, Report

_PATH_LINE = re.compile(r"^(?P<path>[^\s:][^:]*?):(?P<line>\d+)$")


@dataclass(frozen=True)
class Location:
    path: str
    line: int | None


def of(finding: Finding, cwd: Path | None = None) -> Location | None:
    base = (cwd or Path.cwd()).resolve()
    for item in finding.evidence:
        m = _PATH_LINE.match(item.strip())
        if m:
            return Location(_relative(m.group("path"), base), int(m.group("line")))
    for item in finding.evidence:
        text = item.strip()
        if text and not text.startswith(("-", "http")) and " " not in text and os.path.isfile(text):
            return Location(_relative(text, base), None)
    return None


def _relative(path: str, base: Path) -> str:
    try:
        return Path(path).resolve().relative_to(base).as_posix()
    except (ValueError, OSError):
        return path


def every(finding: Finding, cwd: Path | None = None) -> list[Location]:
    """Every `path:line` of the evidence, in order, each once: a finding merged from two input files
    (the same package in both) keeps a place in each. Else the one place `of` finds."""
    base = (cwd or Path.cwd()).resolve()
    out: list[Location] = []
    for item in finding.evidence:
        m = _PATH_LINE.match(item.strip())
        if m:
            loc = Location(_relative(m.group("path"), base), int(m.group("line")))
            if loc not in out:
                out.append(loc)
    if out:
        return out
    one = of(finding, cwd)
    return [one] if one is not None else []


def for_result(finding: Finding, report: Report, cwd: Path | None = None) -> list[Location]:
    """At least one place for every result (code scanning rejects a result without one): the finding's
    own, else its subject when that is a file (a lock, a dist-info folder's file), else what the command
    read (its first input, the lock folder, the environment)."""
    found = every(finding, cwd)
    if found:
        return found
    base = (cwd or Path.cwd()).resolve()
    for candidate in (finding.subject, *report.target.split()):
        if candidate and os.path.exists(candidate):
            return [Location(_relative(candidate, base), None)]
    return [Location(report.target.split()[0] if report.target.split() else report.command, None)]

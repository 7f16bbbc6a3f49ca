"""Where a finding points in the user's files: the first `path:line` (or existing path) in its evidence,
made relative to the working directory when it lies inside it (annotations and SARIF want repository
paths). Presentation only: no finding changes here."""

from __future__ import annotations

import os
import re
from dataclasses import dataclass
from pathlib import Path

from sparkenv.report import Finding

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

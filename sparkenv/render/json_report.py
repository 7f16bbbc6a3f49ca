"""The versioned JSON report (schema sparkenv.core.report/1, see sparkenv/data/report.schema.json)."""

from __future__ import annotations

import json
from typing import Any

from sparkenv import __version__
from sparkenv.core.printable import printable_tree
from sparkenv.core.report import SCHEMA, Report, Status


def as_dict(report: Report) -> dict[str, Any]:
    return printable_tree(_as_dict(report))


def _as_dict(report: Report) -> dict[str, Any]:
    return {
        "schema": SCHEMA,
        "sparkenv_version": __version__,
        "command": report.command,
        "target": report.target,
        "profile": report.profile,
        "verdict": report.verdict.value,
        "counts": {s.value: report.count(s) for s in Status},
        "context": report.context,
        "findings": [
            {
                "id": f.id,
                "status": f.status.value,
                "summary": f.summary,
                "subject": f.subject,
                "evidence": list(f.evidence),
                "fix": f.fix,
            }
            for f in report.sorted_findings()
        ],
    }


def render(report: Report, ascii_only: bool = False) -> str:
    return json.dumps(as_dict(report), indent=2, ensure_ascii=ascii_only) + "\n"

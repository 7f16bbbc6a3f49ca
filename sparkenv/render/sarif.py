"""SARIF 2.1.0 (`--sarif FILE`) for code scanning: one rule per G-number (its title and `sparkenv
explain` text), one result per FAIL, WARN and ERROR finding with its location where known; a waived
finding is a result with an external suppression carrying the waiver's reason. Presentation only.

Format: https://docs.oasis-open.org/sarif/sarif/v2.1.0/sarif-v2.1.0.html; GitHub's subset:
https://docs.github.com/en/code-security/code-scanning/integrating-with-code-scanning/sarif-support-for-code-scanning
"""

from __future__ import annotations

import json

from sparkenv import gotchas
from sparkenv.core.report import Report, Status
from sparkenv.render import location

SCHEMA = "https://json.schemastore.org/sarif-2.1.0.json"
LEVEL = {Status.FAIL: "error", Status.ERROR: "error", Status.WARN: "warning", Status.INFO: "note"}


def _rules(ids: list[str]) -> list[dict[str, object]]:

    out = []
    for gid in ids:
        g = gotchas.lookup(gid)
        out.append(
            {
                "id": gid,
                "name": gid,
                "shortDescription": {"text": g.title},
                "fullDescription": {"text": f"{g.symptom} Cause: {g.cause}"},
                "help": {"text": f"Fix: {g.fix} (sparkenv explain {gid})"},
            }
        )
    return out


def render(report: Report, version: str) -> str:
    results = []
    for f in report.sorted_findings():
        waived = f.status is Status.INFO and f.summary.startswith("waived ")
        if f.status not in (Status.FAIL, Status.ERROR, Status.WARN) and not waived:
            continue
        result: dict[str, object] = {
            "ruleId": f.id,
            "level": "warning" if waived else LEVEL[f.status],
            "message": {
                "text": f"{f.id} {f.status.value}: {f.summary}" + (f" — fix: {f.fix}" if f.fix else "")
            },
            "partialFingerprints": {"sparkenvSubject/v1": f"{report.command}:{f.id}:{f.subject}"},
            "properties": {"subject": f.subject, "status": f.status.value, "evidence": list(f.evidence)},
        }
        places = []
        for where in location.for_result(f, report):
            physical: dict[str, object] = {"artifactLocation": {"uri": where.path}}
            if where.line is not None:
                physical["region"] = {"startLine": where.line}
            places.append({"physicalLocation": physical})
        result["locations"] = places
        if waived:
            reason = next((e for e in f.evidence if e.startswith("waived by ")), "waived")
            result["suppressions"] = [{"kind": "external", "justification": reason}]
        results.append(result)
    ids = sorted({str(r["ruleId"]) for r in results}, key=lambda g: int(g[1:]))
    doc = {
        "$schema": SCHEMA,
        "version": "2.1.0",
        "runs": [
            {
                "tool": {
                    "driver": {
                        "name": "sparkenv",
                        "version": version,
                        "rules": _rules(ids),
                    }
                },
                "automationDetails": {"id": f"sparkenv/{report.command}/"},
                "results": results,
            }
        ],
    }
    return json.dumps(doc, indent=2) + "\n"

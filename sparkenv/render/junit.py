"""JUnit XML for CI systems: one test case per finding."""

from __future__ import annotations

import xml.etree.ElementTree as ET

from sparkenv.core.report import Report, Status
from sparkenv.render.text import finding_line


def render(report: Report, strict: bool = False) -> str:
    findings = report.sorted_findings()
    failing = {Status.FAIL} | ({Status.WARN} if strict else set())
    suite = ET.Element(
        "testsuite",
        name=f"sparkenv {report.command}",
        tests=str(len(findings)),
        failures=str(sum(1 for f in findings if f.status in failing)),
        errors=str(report.count(Status.ERROR)),
        skipped=str(report.count(Status.SKIP)),
    )
    for f in findings:
        case = ET.SubElement(suite, "testcase", classname=f"sparkenv.{report.command}.{f.id}", name=f.subject)
        details = "\n".join([f.summary, *f.evidence, *([f"fix: {f.fix}"] if f.fix else [])])
        if f.status in failing:
            ET.SubElement(case, "failure", message=finding_line(f), type=f.status.value).text = details
        elif f.status is Status.ERROR:
            ET.SubElement(case, "error", message=finding_line(f)).text = details
        elif f.status is Status.SKIP:
            ET.SubElement(case, "skipped", message=f.summary)
        else:
            ET.SubElement(case, "system-out").text = finding_line(f)
    ET.indent(suite)
    return '<?xml version="1.0" encoding="utf-8"?>\n' + ET.tostring(suite, encoding="unicode") + "\n"

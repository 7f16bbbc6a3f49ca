"""All of `sparkenv lock`'s outputs or none: the two lock files, --report and --junit.

Every path is checked before the resolution starts (minutes can go into it), then all of them go
through sparkenv.outputs, the one all-or-nothing writer: temporaries beside each destination, moved into
place only when every one was written. A failing --report therefore leaves the previous lock untouched.
"""

from __future__ import annotations

from pathlib import Path

from sparkenv import outputs
from sparkenv.report import Report


def check_writable(paths: list[str]) -> None:
    outputs.check(paths)


def write_all(
    result: Report, pending: dict[Path, str], *, report: str | None, junit: str | None, strict: bool
) -> None:
    from sparkenv.render import json_report

    files: list[tuple[str | Path, str]] = list(pending.items())
    if report:
        files.append((report, json_report.render(result)))
    if junit:
        from sparkenv.render import junit as junit_xml

        files.append((junit, junit_xml.render(result, strict=strict)))
    if files:
        outputs.write_all(files, make_parents=True)  # the lock folder (lockfiles/) is made when missing

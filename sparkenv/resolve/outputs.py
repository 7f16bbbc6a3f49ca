"""All of `sparkenv lock`'s outputs or none: the two lock files, --report and --junit.

Every path is checked before the resolution starts (minutes can go into it), then every file is
written to a temporary beside its destination, and only when all of them are written are they moved
into place. A failing --report therefore leaves the previous lock untouched.
(Small on purpose: the project's general all-or-nothing output helper, issue 11, replaces it once landed.)
"""

from __future__ import annotations

import os
from pathlib import Path

from sparkenv.errors import SparkenvError
from sparkenv.report import Report
from sparkenv.resolve import lockfile


def check_writable(paths: list[str]) -> None:
    for p in paths:
        dest = Path(p)
        parent = dest.parent if str(dest.parent) else Path(".")
        if dest.is_dir():
            raise SparkenvError(f"{p}: is a folder, not a file to write")
        if not parent.is_dir():
            raise SparkenvError(f"{p}: cannot write it: folder {parent} does not exist")
        if not os.access(parent, os.W_OK | os.X_OK):
            raise SparkenvError(f"{p}: cannot write it: folder {parent} is not writable")


def write_all(
    result: Report, pending: dict[Path, str], *, report: str | None, junit: str | None, strict: bool
) -> None:
    from sparkenv.render import json_report

    files = dict(pending)
    if report:
        files[Path(report)] = json_report.render(result)
    if junit:
        from sparkenv.render import junit as junit_xml

        files[Path(junit)] = junit_xml.render(result, strict=strict)
    if files:
        lockfile.write_pair(files)

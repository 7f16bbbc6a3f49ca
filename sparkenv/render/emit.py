"""Hand a finished report to the user: stdout, the --report and --junit files, the exit code."""

from __future__ import annotations

import os
import sys
from pathlib import Path
from typing import TextIO

from sparkenv.errors import SparkenvError
from sparkenv.report import Report


def emit(
    result: Report,
    *,
    json_out: bool,
    report: str | None,
    junit: str | None,
    strict: bool,
    quiet: bool,
    stream: TextIO | None = None,
) -> int:
    """Write the files first (a failure there is exit 2 before anything is printed), then stdout."""
    from sparkenv.render import json_report, text

    if report:
        write_atomic(report, json_report.render(result))
    if junit:
        from sparkenv.render import junit as junit_xml

        write_atomic(junit, junit_xml.render(result, strict=strict))
    out = stream or sys.stdout
    out.write(json_report.render(result) if json_out else text.render(result, quiet=quiet))
    out.flush()
    return result.exit_code(strict)


def write_atomic(path: str, content: str) -> None:
    """Write whole or not at all: a reader never sees half a report."""
    dest = Path(path)
    tmp = dest.with_name(f".{dest.name}.{os.getpid()}.tmp")
    try:
        tmp.write_text(content, encoding="utf-8")
        os.replace(tmp, dest)
    except OSError as exc:
        tmp.unlink(missing_ok=True)
        raise SparkenvError(f"{path}: cannot write report: {exc.strerror}") from None

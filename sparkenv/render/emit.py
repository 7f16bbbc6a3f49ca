"""Hand a finished report to the user: stdout, the --report and --junit files, the exit code."""

from __future__ import annotations

import sys
from typing import TextIO

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
    """Write the files first, all or none (a failure there is exit 2 before anything is printed), then
    stdout."""
    from sparkenv import outputs
    from sparkenv.render import json_report, text

    files: list[tuple[str, str]] = []
    if report:
        files.append((report, json_report.render(result)))
    if junit:
        from sparkenv.render import junit as junit_xml

        files.append((junit, junit_xml.render(result, strict=strict)))
    outputs.write_all(files)
    out = stream or sys.stdout
    if json_out:
        # JSON stays lossless on a stream that cannot take every character (PYTHONIOENCODING=ascii)
        out.write(json_report.render(result, ascii_only=not _takes_unicode(out)))
    else:
        out.write(text.render(result, quiet=quiet))
    out.flush()
    return result.exit_code(strict)


def _takes_unicode(stream: TextIO) -> bool:
    encoding = (getattr(stream, "encoding", None) or "").lower().replace("-", "").replace("_", "")
    return encoding.startswith(("utf", "ucs"))


def write_atomic(path: str, content: str) -> None:
    """Write whole or not at all: a reader never sees half a file (see sparkenv.outputs)."""
    from sparkenv import outputs

    outputs.write_one(path, content)

"""Hand a finished report to the user: the waivers applied, stdout in the chosen format (text, coloured
on a terminal; JSON; GitHub annotations), the --report, --junit and --sarif files, the exit code."""

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
    select: list[str] | None = None,
    ignore: list[str] | None = None,
    stream: TextIO | None = None,
    fmt: str | None = None,
    sarif: str | None = None,
    waivers_file: str | None = None,
    waive: list[str] | None = None,
) -> int:
    """Select, apply the waivers, write the files, all or none (a failure there is exit 2 before anything
    is printed), then stdout. `select`/`ignore`: the --select/--ignore values, applied first."""
    from sparkenv import __version__, outputs, waivers
    from sparkenv.render import json_report, text
    from sparkenv.report import parse_ids, selected

    result = selected(result, parse_ids(select, "--select"), parse_ids(ignore, "--ignore"))

    fmt = _format(fmt, json_out)
    result = waivers.apply(result, waivers.load(waivers_file, waive))
    files: list[tuple[str, str]] = []
    if report:
        files.append((report, json_report.render(result)))
    if junit:
        from sparkenv.render import junit as junit_xml

        files.append((junit, junit_xml.render(result, strict=strict)))
    if sarif:
        from sparkenv.render import sarif as sarif_doc

        files.append((sarif, sarif_doc.render(result, __version__)))
    outputs.write_all(files)
    out = stream or sys.stdout
    if fmt == "json":
        # JSON stays lossless on a stream that cannot take every character (PYTHONIOENCODING=ascii)
        out.write(json_report.render(result, ascii_only=not _takes_unicode(out)))
    elif fmt == "github":
        from sparkenv.render import github

        out.write(github.render(result, quiet=quiet, strict=strict))
    else:
        from sparkenv.render import colour

        body = text.render(result, quiet=quiet)
        out.write(colour.paint(body) if colour.wanted(out) else body)
    out.flush()
    return result.exit_code(strict)


FORMATS = ("text", "json", "github")


def _format(fmt: str | None, json_out: bool) -> str:
    from sparkenv.errors import SparkenvError

    if fmt is not None and fmt not in FORMATS:
        raise SparkenvError(f"--format {fmt}: choose one of {', '.join(FORMATS)}")
    if json_out and fmt not in (None, "json"):
        raise SparkenvError(f"--json and --format {fmt} disagree: give one")
    return "json" if json_out else fmt or "text"


def _takes_unicode(stream: TextIO) -> bool:
    encoding = (getattr(stream, "encoding", None) or "").lower().replace("-", "").replace("_", "")
    return encoding.startswith(("utf", "ucs"))


def write_atomic(path: str, content: str) -> None:
    """Write whole or not at all: a reader never sees half a file (see sparkenv.outputs)."""
    from sparkenv import outputs

    outputs.write_one(path, content)

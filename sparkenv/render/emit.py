"""Hand a finished report to the user: --select/--ignore and the waivers applied, stdout in the chosen
format (text, coloured on a terminal; JSON; GitHub annotations), the --report, --junit and --sarif files,
the exit code. Every command that reports calls `emit(report, options)` with its ReportOptions."""

from __future__ import annotations

import sys
from collections.abc import Callable
from dataclasses import dataclass
from typing import TextIO

from sparkenv import __version__
from sparkenv.core import outputs, waivers
from sparkenv.core.report import Report, parse_ids, selected
from sparkenv.render import colour, json_report, text
from sparkenv.render.options import ReportOptions, output_format


@dataclass(frozen=True)
class Shown:
    """A report as the user sees it: --select/--ignore and the waivers applied, once. Its exit code is the
    command's; a command that decides something on it first (the gate's start, build's tag) hands it to
    `emit` as it is, so what it decided on and what it prints cannot differ."""

    report: Report


def shown(result: Report | Shown, options: ReportOptions) -> Shown:

    if isinstance(result, Shown):
        return result
    result = selected(result, parse_ids(options.select, "--select"), parse_ids(options.ignore, "--ignore"))
    result = waivers.apply(result, waivers.load(options.waivers_file, list(options.waive)))
    return Shown(result)


def files(view: Shown, options: ReportOptions) -> list[tuple[str, str]]:
    """(path, content) of --report, --junit and --sarif: for core.outputs, which writes all or none."""

    out: list[tuple[str, str]] = []
    if options.report:
        out.append((options.report, json_report.render(view.report)))
    if options.junit:
        from sparkenv.render import junit as junit_xml

        out.append((options.junit, junit_xml.render(view.report, strict=options.strict)))
    if options.sarif:
        from sparkenv.render import sarif as sarif_doc

        out.append((options.sarif, sarif_doc.render(view.report, __version__)))
    return out


def emit(
    result: Report | Shown,
    options: ReportOptions,
    *,
    stream: TextIO | None = None,
    more: Callable[[Shown], list[tuple[str, str]]] | None = None,
) -> int:
    """Select, apply the waivers, write the files, all or none (a failure there is exit 2 before anything
    is printed), then stdout (or `stream`: the gate's stderr in front of a workload). The exit code.
    `more`: a command's own files (attest's --html), made from the same shown report, written with them."""

    fmt = output_format(options)
    view = shown(result, options)
    outputs.write_all(files(view, options) + (more(view) if more else []))
    out = stream or sys.stdout
    if fmt == "json":
        # JSON stays lossless on a stream that cannot take every character (PYTHONIOENCODING=ascii)
        out.write(json_report.render(view.report, ascii_only=not _takes_unicode(out)))
    elif fmt == "github":
        from sparkenv.render import github

        out.write(github.render(view.report, quiet=options.quiet, strict=options.strict))
    else:
        body = text.render(view.report, quiet=options.quiet)
        out.write(colour.paint(body) if colour.wanted(out) else body)
    out.flush()
    return view.report.exit_code(options.strict)


def _takes_unicode(stream: TextIO) -> bool:
    encoding = (getattr(stream, "encoding", None) or "").lower().replace("-", "").replace("_", "")
    return encoding.startswith(("utf", "ucs"))


def write_atomic(path: str, content: str) -> None:
    """Write whole or not at all: a reader never sees half a file (see sparkenv.core.outputs)."""

    outputs.write_one(path, content)

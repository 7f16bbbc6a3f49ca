"""GitHub Actions workflow commands (`--format github`): one `::error`/`::warning` line per problem,
with `file=` and `line=` wherever SARIF has a location for it (the same places), so the problem shows on
the pull request's diff; then the ordinary text lines for the log. Presentation only."""

from __future__ import annotations

from sparkenv.core.report import Report, Status
from sparkenv.render import location
from sparkenv.render import text as text_render

LEVEL = {Status.FAIL: "error", Status.ERROR: "error", Status.WARN: "warning"}


def _escape_data(value: str) -> str:
    # https://github.com/actions/toolkit/blob/main/packages/core/src/command.ts (escapeData/escapeProperty)
    return value.replace("%", "%25").replace("\r", "%0D").replace("\n", "%0A")


def _escape_property(value: str) -> str:
    return _escape_data(value).replace(":", "%3A").replace(",", "%2C")


def render(report: Report, *, quiet: bool = False, strict: bool = False) -> str:
    lines = []
    for f in report.sorted_findings():
        level = LEVEL.get(f.status)
        if level is None:
            continue
        if strict and level == "warning":
            level = "error"
        title = f"title={_escape_property(f'sparkenv {f.id} {f.status.value}: {f.subject}')}"
        message = f"{f.id} {f.status.value}: {f.summary}" + (f" — fix: {f.fix}" if f.fix else "")
        # one annotation per place, the places SARIF gives the same finding (location.for_result): a
        # finding from two input files shows on each file, one about the lock on the lock
        for where in location.for_result(f, report):
            props = [f"file={_escape_property(where.path)}", title]
            if where.line is not None:
                props.insert(1, f"line={where.line}")
            lines.append(f"::{level} {','.join(props)}::{_escape_data(message)}")
    body = text_render.render(report, quiet=quiet)
    return ("\n".join(lines) + "\n" if lines else "") + body

"""The reporting options every command that reports takes, as one frozen bundle.

`sparkenv.cli_options.reporting` builds it from the typer options; the gate's fast path (gate/fastpath.py,
no typer) builds it from its own parser with the spellings below; `sparkenv.render.emit.emit(report,
options)` reads it. Nothing is imported here: the gate pays for this module before every workload.
"""

from __future__ import annotations

from dataclasses import dataclass

# The command-line spellings of the bundle's fields, as the gate's fast path parses them; a test holds the
# typer options (sparkenv.cli_options) to the same list.
# The gate spells "fail on WARN" --fail-on-warn (beside --policy strict a second "strict" read as one
# switch); every other command --strict, with --fail-on-warn as its alias.
VALUED = {
    "--report": "report",
    "--junit": "junit",
    "--select": "select",
    "--ignore": "ignore",
    "--format": "fmt",
    "--sarif": "sarif",
    "--waive": "waive",
    "--waivers": "waivers_file",
}
FLAGS = {
    "--json": "json_out",
    "--strict": "strict",
    "--fail-on-warn": "strict",
    "-q": "quiet",
    "--quiet": "quiet",
}
REPEATED = frozenset({"select", "ignore", "waive"})  # each occurrence adds to the list


@dataclass(frozen=True)
class ReportOptions:
    json_out: bool = False  # --json: stdout is the JSON report (as --format json)
    report: str | None = None  # --report FILE: the JSON report, beside stdout
    junit: str | None = None  # --junit FILE
    sarif: str | None = None  # --sarif FILE
    fmt: str | None = None  # --format text|json|github (None: text, or JSON under --json)
    strict: bool = False  # --strict / the gate's --fail-on-warn: WARN and ERROR fail too
    quiet: bool = False  # -q: only FAIL, ERROR and WARN lines, then the verdict
    select: tuple[str, ...] = ()  # --select G4,G8 as given (parsed by sparkenv.report.parse_ids)
    ignore: tuple[str, ...] = ()
    waive: tuple[str, ...] = ()  # --waive G9:torch
    waivers_file: str | None = None  # --waivers FILE (default ./.sparkenv-waivers.toml when it exists)

    @property
    def files(self) -> tuple[str, ...]:
        """The files the report goes to beside stdout: checked for writability before long work."""
        return tuple(p for p in (self.report, self.junit, self.sarif) if p)

    @property
    def machine_stdout(self) -> bool:
        """stdout is for a program (JSON): progress and notes go to stderr."""
        return self.json_out or self.fmt == "json"

    def check(self) -> ReportOptions:
        """The usage errors of the options themselves (a bad --select, --format or --json/--format
        clash), raised before any work starts: exit 2 at once, not after a resolution or a build."""
        from sparkenv.render.emit import output_format
        from sparkenv.report import parse_ids

        parse_ids(self.select, "--select")
        parse_ids(self.ignore, "--ignore")
        output_format(self)
        return self

"""The reporting options every command that reports takes, as one frozen bundle.

The options that fill it are declared below, once: `sparkenv.cli.options.reporting` builds the typer
options from them, the lean parsers of gate, check and audit (sparkenv/core/fastargs.py, no typer) read the
same declarations, and `bundle` makes the ReportOptions from either parser's values;
`sparkenv.render.emit.emit(report, options)` reads it. The gate pays for this module before every
workload: a NamedTuple (frozen, cheap to define) rather than a frozen dataclass (its methods are generated
by exec).
"""

from __future__ import annotations

from typing import Any, NamedTuple

from sparkenv.core.errors import SparkenvError
from sparkenv.core.optionspec import Option

# The options that fill the bundle, declared once for every reporting command's two parsers: the typer
# commands (sparkenv/cli/options.py builds their parameters from these) and the lean ones of the gate,
# check and audit (sparkenv/core/fastargs.py). `bundle` turns either parser's values into ReportOptions.
JSON = Option(
    "json_out",
    ("--json",),
    bool,
    default=False,
    help="Print the JSON report (schema sparkenv.core.report/1) instead of text lines.",
)
REPORT = Option("report", ("--report",), metavar="FILE", help="Also write the JSON report to FILE.")
JUNIT = Option(
    "junit", ("--junit",), metavar="FILE", help="Also write JUnit XML to FILE, one test case per finding."
)
STRICT = Option(
    "strict",
    ("--strict", "--fail-on-warn"),
    bool,
    default=False,
    help="Exit 1 on WARN and ERROR findings too, not only on FAIL.",
)
# The gate spells it only --fail-on-warn: next to --policy strict, a second "strict" read as one switch.
FAIL_ON_WARN = Option(
    "fail_on_warn",
    ("--fail-on-warn",),
    bool,
    default=False,
    help="WARN and ERROR findings count as failures: exit 1 without a workload; with a workload under "
    "--policy strict they block the start too.",
)
STRICT_ALIAS = Option(
    "strict", ("--strict",), bool, default=False, help="Old name of --fail-on-warn.", hidden=True
)
QUIET = Option(
    "quiet",
    ("--quiet", "-q"),
    bool,
    default=False,
    help="Print only FAIL, ERROR and WARN lines, then the verdict.",
)
SELECT = Option(
    "select",
    ("--select",),
    many=True,
    metavar="G4,G8",
    help="Report only these G-numbers (comma-separated or repeated); the verdict and exit code follow.",
)
IGNORE = Option(
    "ignore",
    ("--ignore",),
    many=True,
    metavar="G4,G8",
    help="Leave these G-numbers out of the report, the verdict and the exit code.",
)
FORMAT = Option(
    "fmt",
    ("--format",),
    metavar="text|json|github",
    help="How to print the report: text lines (default; coloured on a terminal), JSON (as --json), or "
    "github: GitHub Actions annotations (::error file=…,line=…::) before the text lines.",
)
SARIF = Option(
    "sarif",
    ("--sarif",),
    metavar="FILE",
    help="Also write SARIF 2.1.0 to FILE, for code scanning (upload-sarif).",
)
WAIVE = Option(
    "waive",
    ("--waive",),
    many=True,
    metavar="G<N>:SUBJECT",
    help="Accept one finding (e.g. G9:torch; * for every subject): shown as waived, does not fail. "
    "Repeatable.",
)
WAIVERS = Option(
    "waivers_file",
    ("--waivers",),
    metavar="FILE",
    help="Waivers with reasons and expiry dates ([[waiver]] id, subject, reason, expires). Default: "
    "./.sparkenv-waivers.toml when it exists.",
)


def _in_help_order(*strict: Option) -> tuple[Option, ...]:
    return (JSON, REPORT, JUNIT, *strict, QUIET, SELECT, IGNORE, FORMAT, SARIF, WAIVE, WAIVERS)


REPORTING = _in_help_order(STRICT)
GATE_REPORTING = _in_help_order(FAIL_ON_WARN, STRICT_ALIAS)


class ReportOptions(NamedTuple):
    json_out: bool = False  # --json: stdout is the JSON report (as --format json)
    report: str | None = None  # --report FILE: the JSON report, beside stdout
    junit: str | None = None  # --junit FILE
    sarif: str | None = None  # --sarif FILE
    fmt: str | None = None  # --format text|json|github (None: text, or JSON under --json)
    strict: bool = False  # --strict / the gate's --fail-on-warn: WARN and ERROR fail too
    quiet: bool = False  # -q: only FAIL, ERROR and WARN lines, then the verdict
    select: tuple[str, ...] = ()  # --select G4,G8 as given (parsed by sparkenv.core.report.parse_ids)
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
        if self.select or self.ignore:  # sparkenv.core.report reads the gotcha catalogue: the gate's early
            from sparkenv.core.report import parse_ids  # start and the lock's, before uv's spawn, do without

            parse_ids(self.select, "--select")
            parse_ids(self.ignore, "--ignore")
        output_format(self)
        return self


FORMATS = ("text", "json", "github")


def output_format(options: ReportOptions) -> str:
    fmt = options.fmt
    if fmt is not None and fmt not in FORMATS:
        raise SparkenvError(f"--format {fmt}: choose one of {', '.join(FORMATS)}")
    if options.json_out and fmt not in (None, "json"):
        raise SparkenvError(f"--json and --format {fmt} disagree: give one")
    return "json" if options.json_out else fmt or "text"


def bundle(values: dict[str, Any]) -> ReportOptions:
    """The reporting options' values, as either parser hands them over (None for a list not given), as
    one ReportOptions (not yet checked: `.check()`)."""
    return ReportOptions(
        json_out=bool(values.get("json_out")),
        report=values.get("report"),
        junit=values.get("junit"),
        sarif=values.get("sarif"),
        fmt=values.get("fmt"),
        strict=bool(values.get("strict") or values.get("fail_on_warn")),
        quiet=bool(values.get("quiet")),
        select=tuple(values.get("select") or ()),
        ignore=tuple(values.get("ignore") or ()),
        waive=tuple(values.get("waive") or ()),
        waivers_file=values.get("waivers_file"),
    )

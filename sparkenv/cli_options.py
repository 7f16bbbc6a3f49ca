"""Options every report-producing command shares, so they read and behave the same everywhere."""

from __future__ import annotations

import typer

JSON = typer.Option("--json", help="Print the JSON report (schema sparkenv.report/1) instead of text lines.")
REPORT = typer.Option("--report", metavar="FILE", help="Also write the JSON report to FILE.")
JUNIT = typer.Option(
    "--junit", metavar="FILE", help="Also write JUnit XML to FILE, one test case per finding."
)
STRICT = typer.Option(
    "--strict", "--fail-on-warn", help="Exit 1 on WARN and ERROR findings too, not only on FAIL."
)
# The gate spells it only --fail-on-warn: next to --policy strict, a second "strict" read as one switch.
FAIL_ON_WARN = typer.Option(
    "--fail-on-warn",
    help="WARN and ERROR findings count as failures: exit 1 without a workload; with a workload under "
    "--policy strict they block the start too.",
)
STRICT_ALIAS = typer.Option("--strict", hidden=True, help="Old name of --fail-on-warn.")
SELECT = typer.Option(
    "--select",
    metavar="G4,G8",
    help="Report only these G-numbers (comma-separated or repeated); the verdict and exit code follow.",
)
IGNORE = typer.Option(
    "--ignore",
    metavar="G4,G8",
    help="Leave these G-numbers out of the report, the verdict and the exit code.",
)
QUIET = typer.Option("--quiet", "-q", help="Print only FAIL, ERROR and WARN lines, then the verdict.")
FORMAT = typer.Option(
    "--format",
    metavar="text|json|github",
    help="How to print the report: text lines (default; coloured on a terminal), JSON (as --json), or "
    "github: GitHub Actions annotations (::error file=…,line=…::) before the text lines.",
)
SARIF = typer.Option(
    "--sarif", metavar="FILE", help="Also write SARIF 2.1.0 to FILE, for code scanning (upload-sarif)."
)
WAIVE = typer.Option(
    "--waive",
    metavar="G<N>:SUBJECT",
    help="Accept one finding (e.g. G9:torch; * for every subject): shown as waived, does not fail. "
    "Repeatable.",
)
WAIVERS = typer.Option(
    "--waivers",
    metavar="FILE",
    help="Waivers with reasons and expiry dates ([[waiver]] id, subject, reason, expires). Default: "
    "./.sparkenv-waivers.toml when it exists.",
)


def positive_seconds(value: float | None) -> float | None:
    """A duration option: finite and above zero (`nan`, `inf`, 0 and negatives are usage errors, exit 2)."""
    import math

    if value is not None and not (math.isfinite(value) and value > 0):
        raise typer.BadParameter(f"{value} is not a positive number of seconds")
    return value


def check_selection(select: list[str] | None, ignore: list[str] | None) -> None:
    """--select/--ignore checked before any work: a typo is exit 2 at once, not after a resolution."""
    from sparkenv.report import parse_ids

    parse_ids(select, "--select")
    parse_ids(ignore, "--ignore")

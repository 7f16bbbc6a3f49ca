"""Options every report-producing command shares, so they read and behave the same everywhere: one set of
typer options, added to each command by `@reporting()`, which hands the command one ReportOptions."""

from __future__ import annotations

import functools
import inspect
from collections.abc import Callable
from typing import Annotated, Any, Optional, TypeVar

import typer

from sparkenv.render.options import ReportOptions

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

# the environment `audit` and `patch sdpa` read (sparkenv.environment.target resolves it)
ENVIRONMENT = typer.Argument(
    metavar="TARGET",
    help="A venv folder, a site-packages folder or a Python interpreter. Default: $VIRTUAL_ENV, else the "
    "environment sparkenv runs in.",
    show_default=False,
)


def _shared(name: str, annotation: Any, default: Any) -> inspect.Parameter:
    return inspect.Parameter(name, inspect.Parameter.KEYWORD_ONLY, default=default, annotation=annotation)


def _parameters(strict: inspect.Parameter, *alias: inspect.Parameter) -> tuple[inspect.Parameter, ...]:
    # Optional, not `X | None`: typer reads these annotations at run time on Python 3.10 too
    return (
        _shared("json_out", Annotated[bool, JSON], False),
        _shared("report", Annotated[Optional[str], REPORT], None),  # noqa: UP045
        _shared("junit", Annotated[Optional[str], JUNIT], None),  # noqa: UP045
        strict,
        *alias,
        _shared("quiet", Annotated[bool, QUIET], False),
        _shared("select", Annotated[Optional[list[str]], SELECT], None),  # noqa: UP045
        _shared("ignore", Annotated[Optional[list[str]], IGNORE], None),  # noqa: UP045
        _shared("fmt", Annotated[Optional[str], FORMAT], None),  # noqa: UP045
        _shared("sarif", Annotated[Optional[str], SARIF], None),  # noqa: UP045
        _shared("waive", Annotated[Optional[list[str]], WAIVE], None),  # noqa: UP045
        _shared("waivers_file", Annotated[Optional[str], WAIVERS], None),  # noqa: UP045
    )


PARAMETERS = _parameters(_shared("strict", Annotated[bool, STRICT], False))
GATE_PARAMETERS = _parameters(
    _shared("fail_on_warn", Annotated[bool, FAIL_ON_WARN], False),
    _shared("strict", Annotated[bool, STRICT_ALIAS], False),
)

F = TypeVar("F", bound=Callable[..., Any])


def reporting(*, gate: bool = False) -> Callable[[F], F]:
    """Give a command the shared reporting options (after its own, in --help) and call it with
    `reporting=ReportOptions(...)`, already checked: a bad --select or --format is exit 2 before any work.
    The command declares `*, reporting: opts.ReportOptions` and passes it to `emit(report, reporting)`."""
    shared = GATE_PARAMETERS if gate else PARAMETERS

    def decorate(func: F) -> F:
        own = [p for p in inspect.signature(func, eval_str=True).parameters.values() if p.name != "reporting"]

        @functools.wraps(func)
        def command(**values: Any) -> Any:
            options = bundle({p.name: values.pop(p.name) for p in shared})
            return func(**values, reporting=options.check())

        params = [*own, *shared]
        command.__signature__ = inspect.Signature(params)  # type: ignore[attr-defined]
        command.__annotations__ = {p.name: p.annotation for p in params}
        return command  # type: ignore[return-value]

    return decorate


def bundle(values: dict[str, Any]) -> ReportOptions:
    """The shared options' values, as typer hands them to a command (None for a list not given)."""
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


def positive_seconds(param: typer.CallbackParam, value: float | None) -> float | None:
    """A duration option: finite, above zero and within sparkenv.bounds (`nan`, `inf`, 0, negatives and
    1e10 are usage errors, exit 2)."""
    from sparkenv.bounds import seconds_problem

    problem = None if value is None else seconds_problem(value, zero_ok=False)
    if problem:  # one line, exit 2 (a click usage error prints four)
        from sparkenv.errors import SparkenvError

        raise SparkenvError(f"{'/'.join(param.opts) or param.name}: {problem}")
    return value

"""Typer options built from the declared ones (sparkenv/core/optionspec.py), so a command's typer parser and
its lean one (sparkenv/core/fastargs.py) read one declaration. The reporting options every report-producing
command shares (render/options.py) are added to each command by `@reporting()`, which hands the command
one ReportOptions; `typer_option` gives a typer-only command's parameter from a shared declaration."""

from __future__ import annotations

import functools
import inspect
from collections.abc import Callable, Sequence
from typing import Annotated, Any, Optional, TypeVar

import typer

from sparkenv.core import optionspec
from sparkenv.core.optionspec import Option
from sparkenv.render.options import GATE_REPORTING, REPORTING, ReportOptions, bundle

__all__ = [
    "ENVIRONMENT",
    "GATE_PARAMETERS",
    "PARAMETERS",
    "ReportOptions",
    "bundle",
    "parameter",
    "reporting",
    "typer_option",
]

# the environment `audit` and `patch sdpa` read (sparkenv.environment.target resolves it)
ENVIRONMENT = typer.Argument(
    metavar="TARGET",
    help="A venv folder, a site-packages folder or a Python interpreter. Default: $VIRTUAL_ENV, else the "
    "environment sparkenv runs in.",
    show_default=False,
)


def typer_option(option: Option) -> Any:
    """The typer option of a declared one (core/optionspec.py): its spellings, metavar, help, envvar."""
    return typer.Option(
        *option.flags, metavar=option.metavar, help=option.help, envvar=option.envvar, hidden=option.hidden
    )


def parameter(option: Option) -> inspect.Parameter:
    """A declared option as a keyword parameter of a typer command."""
    kind: Any = list[str] if option.many else option.kind
    if option.default is None:
        kind = Optional[kind]  # noqa: UP045 - typer reads these annotations at run time on Python 3.10 too
    return inspect.Parameter(
        option.name,
        inspect.Parameter.KEYWORD_ONLY,
        default=option.default,
        annotation=Annotated[kind, typer_option(option)],
    )


PARAMETERS = tuple(parameter(o) for o in REPORTING)
GATE_PARAMETERS = tuple(parameter(o) for o in GATE_REPORTING)

F = TypeVar("F", bound=Callable[..., Any])


def reporting(*, gate: bool = False, options: Sequence[Option] = ()) -> Callable[[F], F]:
    """Give a command the shared reporting options (after its own, in --help) and call it with
    `reporting=ReportOptions(...)`, already checked: a bad --select or --format is exit 2 before any work.
    The command declares `*, reporting: opts.ReportOptions` and passes it to `emit(report, reporting)`.
    `options`: the command's own declared options (those its lean parser reads too), added after its
    arguments; the command gets their values as `values={name: value}` (sparkenv.core.optionspec.values)."""
    shared = GATE_PARAMETERS if gate else PARAMETERS
    declared = tuple(parameter(o) for o in options)

    def decorate(func: F) -> F:
        skip = ("reporting", "values")
        own = [p for p in inspect.signature(func, eval_str=True).parameters.values() if p.name not in skip]

        @functools.wraps(func)
        def command(**given: Any) -> Any:
            report = bundle({p.name: given.pop(p.name) for p in shared}).check()
            if options:
                given["values"] = optionspec.values(options, {p.name: given.pop(p.name) for p in declared})
            return func(**given, reporting=report)

        params = [*own, *declared, *shared]
        command.__signature__ = inspect.Signature(params)  # type: ignore[attr-defined]
        command.__annotations__ = {p.name: p.annotation for p in params}
        return command  # type: ignore[return-value]

    return decorate

"""`sparkenv check …` read without typer (sparkenv/core/fastargs.py): check runs in pre-commit hooks and CI
on every commit, and typer's import (which pulls click and pydantic) cost more than the check itself.
Its options are declared once (resolve/options.py CHECK, render/options.py REPORTING), for this parser
and the typer command alike; anything else returns None and the typer command answers. Both parsers
end in `run`."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, NamedTuple

from sparkenv.core import fastargs, optionspec
from sparkenv.render import options as reporting
from sparkenv.resolve.options import CHECK, inputs_of

OPTIONS = (*CHECK, *reporting.REPORTING)


class CheckArgs(NamedTuple):
    inputs: list[str]
    profile: str | None
    platform: str | None
    extra: list[str] | None
    group: list[str] | None
    lock_input: bool
    pip: bool
    allow_outside: list[str] | None
    reporting: reporting.ReportOptions

    @classmethod
    def of(cls, inputs: list[str], values: Mapping[str, Any], report: reporting.ReportOptions) -> CheckArgs:
        """From either parser: the positional INPUTs, CHECK's values (optionspec.values), the bundle."""
        given, rest = inputs_of(inputs, values)  # -r FILE and INPUT alike
        return cls(inputs=given, reporting=report, **rest)


def parse(argv: list[str]) -> CheckArgs | None:
    """argv after `check`; None where typer should answer (help, unknown option, no INPUT)."""
    parsed = fastargs.parse(argv, OPTIONS)
    if parsed is None:
        return None
    given, inputs = parsed
    args = CheckArgs.of(inputs, optionspec.values(CHECK, given), reporting.bundle(given))
    return args if args.inputs else None  # no INPUT and no -r: typer's usage line


def run(args: CheckArgs) -> int:
    from sparkenv.core import confine
    from sparkenv.render.emit import emit

    confine.allow_outside(args.allow_outside)
    from sparkenv.core.errors import SparkenvError
    from sparkenv.resolve.check import check

    if args.pip and args.lock_input:
        raise SparkenvError("--pip and --lock-input disagree: give one")
    if not args.inputs:
        raise SparkenvError(
            "sparkenv check: name the inputs (requirements files, pyproject.toml, -r FILE, - for stdin)"
        )
    options = args.reporting.check()
    report = check(args.inputs, args.profile, args.platform, args.extra, as_pip=args.pip, groups=args.group)
    return emit(report, options)

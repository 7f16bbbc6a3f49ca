"""`sparkenv check …` read without typer (sparkenv/fastargs.py): check runs in pre-commit hooks and CI
on every commit, and typer's import (which pulls click and pydantic) cost more than the check itself.
Exactly the options the typer command declares (a test compares the two lists); anything else returns
None and the typer command answers."""

from __future__ import annotations

from typing import NamedTuple

from sparkenv import fastargs
from sparkenv.render import options as reporting

VALUED = {"--profile": "profile", "--platform": "platform", "--extra": "extra", **reporting.VALUED}
FLAGS = {"--lock-input": "lock_input", **reporting.FLAGS}
REPEATED = frozenset({"extra", *reporting.REPEATED})
_OWN = frozenset({"profile", "platform", "extra", "lock_input"})


class CheckArgs(NamedTuple):
    inputs: list[str]
    profile: str | None
    platform: str | None
    extra: list[str] | None
    lock_input: bool
    reporting: reporting.ReportOptions


def parse(argv: list[str]) -> CheckArgs | None:
    """argv after `check`; None where typer should answer (help, unknown option, no INPUT)."""
    parsed = fastargs.parse(argv, VALUED, FLAGS, REPEATED)
    if parsed is None or not parsed[1]:
        return None  # no INPUT: typer's usage error
    values, inputs = parsed
    shared = {k: tuple(v) if k in REPEATED else v for k, v in values.items() if k not in _OWN}  # type: ignore[call-overload]
    return CheckArgs(
        inputs,
        values.get("profile"),  # type: ignore[arg-type]
        values.get("platform"),  # type: ignore[arg-type]
        values.get("extra"),  # type: ignore[arg-type]
        bool(values.get("lock_input")),
        reporting.ReportOptions(**shared),  # type: ignore[arg-type]
    )


def run(args: CheckArgs) -> int:
    from sparkenv.render.emit import emit
    from sparkenv.resolve.check import check

    options = args.reporting.check()
    report = check(args.inputs, args.profile, args.platform, args.extra, lock_input=args.lock_input)
    return emit(report, options)

"""`sparkenv audit …` read without typer (sparkenv/core/fastargs.py): an unchanged environment audits from the
cache in less time than typer's import (which pulls click and pydantic) takes. Its options are declared
once (audit/options.py AUDIT, render/options.py REPORTING), for this parser and the typer command alike;
anything else returns None and typer answers. Both parsers end in `run`."""

from __future__ import annotations

import sys
from collections.abc import Mapping
from typing import Any, NamedTuple

from sparkenv.audit.options import AUDIT
from sparkenv.core import fastargs, optionspec
from sparkenv.render import options as reporting

OPTIONS = (*AUDIT, *reporting.REPORTING)


class AuditArgs(NamedTuple):
    target: str | None
    lock: str | None
    machine: str | None
    root: str | None
    gpu: str | None  # None: the GB10
    fix_plan: bool
    reporting: reporting.ReportOptions

    @classmethod
    def of(cls, target: str | None, values: Mapping[str, Any], report: reporting.ReportOptions) -> AuditArgs:
        """From either parser: the TARGET, AUDIT's values (optionspec.values), the bundle."""
        return cls(target=target, reporting=report, **values)


def parse(argv: list[str]) -> AuditArgs | None:
    """argv after `audit`; None where typer should answer (help, unknown option, two targets)."""
    parsed = fastargs.parse(argv, OPTIONS)
    if parsed is None or len(parsed[1]) > 1:
        return None
    given, targets = parsed
    target = targets[0] if targets else None
    return AuditArgs.of(target, optionspec.values(AUDIT, given), reporting.bundle(given))


def run(args: AuditArgs) -> int:
    from sparkenv.audit.run import audit, say_what_was_read
    from sparkenv.cuda import coverage
    from sparkenv.render.emit import emit

    options = args.reporting.check()
    cap = coverage.parse_gpu_option(args.gpu)
    result = audit(args.target, lock=args.lock, machine=args.machine, root=args.root, gpu=cap)
    say_what_was_read(result, options)
    if not args.fix_plan:
        return emit(result, options)

    from sparkenv.audit import fix_plan
    from sparkenv.environment import target

    where = target.resolve(args.target, args.machine)
    planned = fix_plan.plan(result, where)
    result.context["fix_plan"] = planned.as_json()
    code = emit(result, options)
    stream = sys.stderr if options.machine_stdout else sys.stdout
    print("\n".join(planned.lines(where.description)), file=stream, flush=True)
    return code

"""`sparkenv audit …` read without typer (sparkenv/fastargs.py): an unchanged environment audits from the
cache in less time than typer's import (which pulls click and pydantic) takes. Exactly the options the
typer command declares (a test compares the two lists); anything else returns None and typer answers."""

from __future__ import annotations

from typing import NamedTuple

from sparkenv import fastargs
from sparkenv.render import options as reporting

VALUED = {"--lock": "lock", "--machine": "machine", "--root": "root", "--gpu": "gpu", **reporting.VALUED}
FLAGS = dict(reporting.FLAGS)
_OWN = frozenset({"lock", "machine", "root", "gpu"})


class AuditArgs(NamedTuple):
    target: str | None
    lock: str | None
    machine: str | None
    root: str | None
    gpu: str
    reporting: reporting.ReportOptions


def parse(argv: list[str]) -> AuditArgs | None:
    """argv after `audit`; None where typer should answer (help, unknown option, two targets)."""
    parsed = fastargs.parse(argv, VALUED, FLAGS, reporting.REPEATED)
    if parsed is None or len(parsed[1]) > 1:
        return None
    values, targets = parsed
    shared = {k: tuple(v) if k in reporting.REPEATED else v for k, v in values.items() if k not in _OWN}  # type: ignore[call-overload]
    return AuditArgs(
        targets[0] if targets else None,
        values.get("lock"),  # type: ignore[arg-type]
        values.get("machine"),  # type: ignore[arg-type]
        values.get("root"),  # type: ignore[arg-type]
        str(values.get("gpu", "12.1")),
        reporting.ReportOptions(**shared),  # type: ignore[arg-type]
    )


def run(args: AuditArgs) -> int:
    from sparkenv.audit.run import audit, say_what_was_read
    from sparkenv.cuda import coverage
    from sparkenv.render.emit import emit

    options = args.reporting.check()
    cap = coverage.parse_gpu_option(args.gpu)
    result = audit(args.target, lock=args.lock, machine=args.machine, root=args.root, gpu=cap)
    say_what_was_read(result, options)
    return emit(result, options)

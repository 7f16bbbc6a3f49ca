"""`sparkenv gate …` without typer, click or pydantic: the entrypoint runs before every workload, and
those imports cost more than every probe together. Parses the options gate/options.py declares for both
parsers (their spellings and variables), with the lean parser check and audit use
(sparkenv/core/fastargs.py); anything else — --help, a typo, a missing value — returns None, and the typer
command answers with its usual help or error."""

from __future__ import annotations

import os

from sparkenv.core import fastargs, optionspec
from sparkenv.core.optionspec import spellings
from sparkenv.gate.entry import GateArgs
from sparkenv.gate.options import GATE, WATCH
from sparkenv.render import options as reporting

OPTIONS = (*GATE, *reporting.GATE_REPORTING)
SPELLINGS = spellings(OPTIONS)  # every spelling the gate accepts


def parse(argv: list[str]) -> GateArgs | None:
    """argv after `gate`: like click, the first positional starts the workload."""
    parsed = fastargs.parse(argv, OPTIONS, interspersed=False, environ={})
    if parsed is None:
        return None
    given, workload = parsed
    # $SPARKENV_GATE_WATCH, set in an image's environment, must not break a bare `gate`
    environ = os.environ if workload else {k: v for k, v in os.environ.items() if k != WATCH.envvar}
    fastargs.environment(OPTIONS, given, environ)
    return GateArgs(workload=workload, reporting=reporting.bundle(given), **optionspec.values(GATE, given))

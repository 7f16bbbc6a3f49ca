"""`sparkenv gate …` without typer, click or pydantic: the entrypoint runs before every workload, and
those imports cost more than every probe together. Parses the options gate/options.py declares for both
parsers, with the lean parser check and audit use (sparkenv/core/fastargs.py);
anything else — --help, a typo, a missing value — returns None, and the typer command answers with its
usual help or error."""

from __future__ import annotations

import os

from sparkenv.core import fastargs, optionspec
from sparkenv.core.optionspec import spellings
from sparkenv.gate.entry import GateArgs, env_flag
from sparkenv.gate.options import GATE
from sparkenv.render import options as reporting

OPTIONS = (*GATE, *reporting.GATE_REPORTING)
SPELLINGS = spellings(OPTIONS)  # every spelling the gate accepts


def parse(argv: list[str]) -> GateArgs | None:
    """argv after `gate`: like click, the first positional starts the workload."""
    parsed = fastargs.parse(argv, OPTIONS, interspersed=False)
    if parsed is None:
        return None
    given, workload = parsed
    a = GateArgs(workload=workload, reporting=reporting.bundle(given), **optionspec.values(GATE, given))
    return _from_environment(a)


def _from_environment(a: GateArgs) -> GateArgs:
    """What the options leave unset, from $SPARKENV_GATE, $SPARKENV_GATE_DEEP, $SPARKENV_GATE_DEEP_CACHE
    (as the typer command's envvar= reads them)."""
    if a.policy is None and "SPARKENV_GATE" in os.environ:
        a.policy = os.environ["SPARKENV_GATE"]
    if not a.deep:
        a.deep = env_flag("SPARKENV_GATE_DEEP")
    if not a.watch and a.workload:  # set in an image's environment, it must not break a bare `gate`
        a.watch = env_flag("SPARKENV_GATE_WATCH")
    if a.watch_dir is None:
        a.watch_dir = os.environ.get("SPARKENV_WATCH_DIR") or None
    if a.deep_cache is None:
        a.deep_cache = os.environ.get("SPARKENV_GATE_DEEP_CACHE") or None
    return a

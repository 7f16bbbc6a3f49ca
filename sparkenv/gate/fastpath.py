"""`sparkenv gate …` without typer, click or pydantic: the entrypoint runs before every workload, and
those imports cost more than every probe together. Parses exactly the options the typer command
declares (a test compares the two lists) with the lean parser check and audit use (sparkenv/fastargs.py);
anything else — --help, a typo, a missing value — returns None, and the typer command answers with its
usual help or error."""

from __future__ import annotations

import os
from dataclasses import fields

from sparkenv import fastargs
from sparkenv.gate.entry import GateArgs, env_flag
from sparkenv.optionspec import Option, spellings
from sparkenv.render import options as reporting

# The gate's own options are GateArgs' fields (`--need-gb` is need_gb): declared once there, with their
# types and defaults; the typer command declares the same names with their help (a test keeps the three
# in step: names here, defaults there).
_KINDS = {"bool": bool, "float": float, "float | None": float}
OWN = tuple(
    Option(f.name, ("--" + f.name.replace("_", "-"),), _KINDS.get(str(f.type), str), default=f.default)
    for f in fields(GateArgs)
    if f.name not in ("workload", "reporting")
)
OPTIONS = (*OWN, *reporting.GATE_REPORTING)
SPELLINGS = spellings(OPTIONS)  # every spelling the gate accepts


def parse(argv: list[str]) -> GateArgs | None:
    """argv after `gate`: like click, the first positional starts the workload."""
    parsed = fastargs.parse(argv, OPTIONS, interspersed=False)
    if parsed is None:
        return None
    given, workload = parsed
    a = GateArgs(workload=workload, reporting=reporting.bundle(given))
    for o in OWN:
        if o.name in given:
            setattr(a, o.name, given[o.name])
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

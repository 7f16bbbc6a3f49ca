"""`sparkenv gate …` without typer, click or pydantic: the entrypoint runs before every workload, and
those imports cost more than every probe together. Parses exactly the options the typer command
declares (a test compares the two lists); anything else — --help, a typo, a missing value — returns
None, and the typer command answers with its usual help or error."""

from __future__ import annotations

import os
from dataclasses import fields

from sparkenv.errors import SparkenvError
from sparkenv.gate.entry import GateArgs, env_flag
from sparkenv.render import options as reporting

# The gate's own options are GateArgs' fields (`--need-gb` is need_gb): declared once there, with their
# types and defaults; the typer command declares the same names with their help (a test keeps the three
# in step: names here, defaults there).
_OWN = {f.name: str(f.type) for f in fields(GateArgs) if f.name not in ("workload", "reporting")}


def _option(name: str) -> str:
    return "--" + name.replace("_", "-")


VALUED = {**{_option(n): n for n, kind in _OWN.items() if kind != "bool"}, **reporting.VALUED}
REPEATED = reporting.REPEATED  # lists: each occurrence adds to it
FLAGS = {**{_option(n): n for n, kind in _OWN.items() if kind == "bool"}, **reporting.FLAGS}
REPORTING = frozenset({*reporting.VALUED.values(), *reporting.FLAGS.values()})  # ReportOptions' fields
FLOATS = {n for n, kind in _OWN.items() if kind in ("float", "float | None")}


def parse(argv: list[str]) -> GateArgs | None:
    """argv after `gate`."""
    a = GateArgs()
    values: dict[str, object] = {}
    i = 0
    while i < len(argv):
        arg = argv[i]
        if arg == "--":
            a.workload = argv[i + 1 :]
            break
        name, eq, inline = arg.partition("=")
        if name in VALUED:
            if eq:
                raw = inline
            elif i + 1 < len(argv):
                i += 1
                raw = argv[i]
            else:
                return None
            _store(values, name, raw)
        elif arg in FLAGS and not eq:
            values[FLAGS[arg]] = True
        elif arg.startswith("-"):
            return None  # --help and anything unknown: typer says it properly
        else:
            a.workload = argv[i:]  # like click: the first positional starts the workload
            break
        i += 1
    shared = {k: tuple(v) if k in REPEATED else v for k, v in values.items() if k in REPORTING}
    for key, value in values.items():
        if key not in REPORTING:
            setattr(a, key, value)
    a.reporting = reporting.ReportOptions(**shared)  # type: ignore[arg-type]
    return _from_environment(a)


def _store(values: dict[str, object], name: str, raw: str) -> None:
    """One valued option: a number, one more of a repeated option, or a string."""
    key = VALUED[name]
    if key in FLOATS:
        try:
            values[key] = float(raw)
        except ValueError:
            raise SparkenvError(f"{name}: {raw!r} is not a number") from None
    elif key in REPEATED:
        values.setdefault(key, []).append(raw)  # type: ignore[union-attr]
    else:
        values[key] = raw


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

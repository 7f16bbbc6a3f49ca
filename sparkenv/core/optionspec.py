"""A command-line option declared once: its spellings, type, default and help, for both parsers of a command
— the typer command (sparkenv/cli/options.py builds its parameter from it) and the lean parser of the
commands users wait on (sparkenv/core/fastargs.py reads the same declaration). Adding an option to `check`,
`audit` or the reporting options is one Option in one tuple; no second table to keep in step.

Declared without typer: the lean parsers must not import it (typer pulls click and pydantic, which cost
more than a cached audit). A NamedTuple: cheaper to define than a frozen dataclass.
"""

from __future__ import annotations

import os
from collections.abc import Iterable, Mapping
from typing import Any, NamedTuple

TRUE = ("1", "true", "yes", "on", "y", "t")
FALSE = ("0", "false", "no", "off", "n", "f", "")


class Option(NamedTuple):
    name: str  # the parameter name: the key of its value, in both parsers
    flags: tuple[str, ...]  # its spellings; --help lists them in this order
    kind: type = str  # str, float or int: a value follows; bool: a flag
    many: bool = False  # repeatable: every occurrence, in order (None when never given)
    default: Any = None
    metavar: str | None = None
    help: str = ""
    envvar: str | None = None  # also read from this variable when not given (typer reads it)
    hidden: bool = False  # accepted, not listed in --help (an old spelling)

    @property
    def flag(self) -> bool:
        return self.kind is bool


def spellings(options: Iterable[Option]) -> dict[str, Option]:
    """Every spelling of every option: what a parser accepts."""
    return {flag: o for o in options for flag in o.flags}


def env_flag(name: str, environ: Mapping[str, str] = os.environ) -> bool:
    """A yes/no variable (a flag's envvar): 1/0, true/false, yes/no, on/off; unset or empty is no."""
    value = environ.get(name, "").strip().lower()
    if value in TRUE:
        return True
    if value in FALSE:
        return False
    from sparkenv.core.errors import SparkenvError

    raise SparkenvError(f"${name}: {value!r} is not a boolean (use 1 or 0)")


def values(options: Iterable[Option], given: Mapping[str, Any]) -> dict[str, Any]:
    """Each option's value as a command reads it, whichever parser read the line: the given value or the
    default; a repeated option is a list, or None when never given (typer hands that back as () or [])."""
    out = {}
    for o in options:
        value = given.get(o.name, o.default)
        out[o.name] = (list(value) or None) if o.many and value is not None else value
    return out


# Declared here, not by a stage: `gate` and `host` both write and replay the facts snapshot
# (environment/facts_file.py), with one spelling.
DUMP_FACTS = Option(
    "dump_facts",
    ("--dump-facts",),
    metavar="FILE",
    help="Write the facts snapshot (attach it to a bug report).",
)
FACTS = Option(
    "facts", ("--facts",), metavar="FILE", help="Replay a snapshot instead of probing this machine."
)

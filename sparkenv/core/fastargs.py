"""A command line read without typer, click or pydantic, for the commands users wait on (the gate before
every workload, `check` in pre-commit hooks, `audit` of an unchanged environment): those imports cost more
than the commands' own work. It reads the options a command declares (sparkenv/core/optionspec.py: the same
declarations the typer command is built from) — `--name VALUE`, `--name=VALUE`, flags, repeated options,
`--`, and each option's declared variable where the line leaves it unset — and gives up (None) on anything
else (--help, a typo, a missing value), so that the typer command answers with its usual help or error."""

from __future__ import annotations

import os
from collections.abc import Iterable, Mapping

from sparkenv.core.optionspec import Option, env_flag, spellings


def parse(
    argv: list[str],
    options: Iterable[Option],
    *,
    interspersed: bool = True,
    environ: Mapping[str, str] | None = None,
) -> tuple[dict[str, object], list[str]] | None:
    """(the options' values by name, positional arguments). A repeated option is a list in the given
    order; a number is converted (a usage error, exit 2, when it is not one). `interspersed`: options may
    follow positionals (click's default); False: the first positional and everything after it are
    positional (a workload's own command line). `environ`: where the declared variables are read
    (`environment`; default os.environ)."""
    options = tuple(options)
    known = spellings(options)
    values: dict[str, object] = {}
    positional: list[str] = []
    i = 0
    while i < len(argv):
        arg = argv[i]
        if arg == "--":
            positional += argv[i + 1 :]
            break
        name, eq, inline = arg.partition("=")
        option = known.get(name)
        if option is not None and not option.flag:
            if eq:
                raw = inline
            elif i + 1 < len(argv):
                i += 1
                raw = argv[i]
            else:
                return None
            _store(values, option, name, raw)
        elif option is not None and not eq:
            values[option.name] = True
        elif arg.startswith("-") and arg != "-":  # a lone "-" is a positional: standard input
            return None  # --help and anything unknown: typer says it properly
        elif interspersed:
            positional.append(arg)
        else:
            positional += argv[i:]
            break
        i += 1
    return environment(options, values, os.environ if environ is None else environ), positional


def environment(
    options: Iterable[Option], values: dict[str, object], environ: Mapping[str, str]
) -> dict[str, object]:
    """`values` with each option the line left unset taken from its declared variable, as typer's
    envvar= takes it: an empty variable is unset; a flag's is yes or no (env_flag)."""
    for option in options:
        raw = environ.get(option.envvar, "") if option.envvar else ""
        if option.name in values or not raw:
            continue
        if option.flag:
            values[option.name] = env_flag(option.envvar or "", environ)
        else:
            _store(values, option, f"${option.envvar}", raw)
    return values


def _store(values: dict[str, object], option: Option, spelled: str, raw: str) -> None:
    """One valued option: a number, one more of a repeated option, or a string."""
    if option.many:
        values.setdefault(option.name, []).append(raw)  # type: ignore[union-attr]
    elif option.kind in (float, int):
        try:
            values[option.name] = option.kind(raw)
        except ValueError:
            from sparkenv.core.errors import SparkenvError

            raise SparkenvError(f"{spelled}: {raw!r} is not a number") from None
    else:
        values[option.name] = raw

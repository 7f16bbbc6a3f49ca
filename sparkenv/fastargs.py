"""A command line read without typer, click or pydantic, for the commands users wait on (`check` in
pre-commit hooks, `audit` of an unchanged environment; the gate's own loop is in gate/fastpath.py): those
imports cost more than the commands' own work. It
reads exactly the spellings a command declares — `--name VALUE`, `--name=VALUE`, flags, repeated
options, `--` — and gives up (None) on anything else (--help, a typo, a missing value), so that the typer
command answers with its usual help or error. Tests hold each command's spellings to the typer ones."""

from __future__ import annotations

from collections.abc import Collection, Mapping


def parse(
    argv: list[str],
    valued: Mapping[str, str],
    flags: Mapping[str, str],
    repeated: Collection[str] = (),
    *,
    interspersed: bool = True,
) -> tuple[dict[str, object], list[str]] | None:
    """(values by field name, positional arguments). Repeated fields are lists in the given order.
    `interspersed`: options may follow positionals (click's default); False: the first positional and
    everything after it are positional (a workload's own command line)."""
    values: dict[str, object] = {}
    positional: list[str] = []
    i = 0
    while i < len(argv):
        arg = argv[i]
        if arg == "--":
            positional += argv[i + 1 :]
            break
        name, eq, inline = arg.partition("=")
        if name in valued:
            if eq:
                raw = inline
            elif i + 1 < len(argv):
                i += 1
                raw = argv[i]
            else:
                return None
            key = valued[name]
            if key in repeated:
                values.setdefault(key, []).append(raw)  # type: ignore[union-attr]
            else:
                values[key] = raw
        elif arg in flags and not eq:
            values[flags[arg]] = True
        elif arg.startswith("-"):
            return None  # --help and anything unknown: typer says it properly
        elif interspersed:
            positional.append(arg)
        else:
            positional += argv[i:]
            break
        i += 1
    return values, positional

"""Each option of the commands with a lean parser (gate, check, lock, audit) is declared once
(sparkenv/core/optionspec.py) and both parsers read that declaration: for every declared option, given alone,
the typer command and the lean parser hand the command the same values. A new option is one Option in
one tuple, and this test covers it with no edit."""

from __future__ import annotations

import pytest
import typer.main

from sparkenv.audit import audit_args
from sparkenv.cli.commands import app
from sparkenv.core import optionspec
from sparkenv.gate import fastpath
from sparkenv.gate.entry import GateArgs
from sparkenv.gate.options import GATE
from sparkenv.render import options as reporting
from sparkenv.resolve import check_args, lock_args

ENV = ("SPARKENV_GATE", "SPARKENV_GATE_DEEP", "SPARKENV_GATE_DEEP_CACHE", "SPARKENV_GATE_WATCH")
ENV += ("SPARKENV_WATCH_DIR",)


def _command(name: str):  # type: ignore[no-untyped-def]
    return next(c for c in typer.main.get_command(app).commands.values() if c.name == name)


def _argv(option: optionspec.Option, spelling: str) -> list[str]:
    """The option given once (twice when repeatable), with a value of its type."""
    if option.flag:
        return [spelling]
    value = "2.5" if option.kind is float else "7" if option.kind is int else "G1"
    return [spelling, value, spelling, "G9"] if option.many else [f"{spelling}={value}"]


def _cases(options: tuple[optionspec.Option, ...]) -> list:  # type: ignore[type-arg]
    return [pytest.param(o, s, id=s) for o in options for s in o.flags]


def _typer_params(name: str, argv: list[str]) -> dict:  # type: ignore[type-arg]
    return _command(name).make_context(name, list(argv)).params


# command, its lean parser's module, the typed arguments' class, its declared options, the positional
# parameter's name and a value for it
LEAN = {
    "check": (check_args, check_args.CheckArgs, check_args.CHECK, "inputs", "requirements.txt"),
    "lock": (lock_args, lock_args.LockArgs, lock_args.LOCK, "inputs", "requirements.txt"),
    "audit": (audit_args, audit_args.AuditArgs, audit_args.AUDIT, "target", "venv"),
}


@pytest.mark.parametrize(
    ("command", "option", "spelling"),
    [pytest.param(c, *p.values, id=f"{c} {p.id}") for c, row in LEAN.items() for p in _cases(row[0].OPTIONS)],
)
def test_each_lean_parser_reads_each_declared_option_as_typer_does(command, option, spelling):
    module, typed_args, declared, positional, value = LEAN[command]
    argv = [*_argv(option, spelling), value]
    params = _typer_params(command, argv)
    typed = typed_args.of(params[positional], optionspec.values(declared, params), reporting.bundle(params))
    assert module.parse(argv) == typed
    assert typed != module.parse([value])  # the option did change something


@pytest.mark.parametrize(("option", "spelling"), _cases(fastpath.OPTIONS))
def test_the_gate_reads_each_declared_option_as_typer_does(option, spelling, monkeypatch):
    for name in ENV:
        monkeypatch.delenv(name, raising=False)
    argv = [*_argv(option, spelling), "--", "python", "train.py"]
    params = _typer_params("gate", argv)
    typed = GateArgs(
        workload=list(params["workload"]),
        reporting=reporting.bundle(params),
        **optionspec.values(GATE, params),
    )
    assert fastpath.parse(argv) == typed
    assert typed != fastpath.parse(["--", "python", "train.py"])


@pytest.mark.parametrize(
    "options",
    [check_args.OPTIONS, lock_args.OPTIONS, audit_args.OPTIONS, fastpath.OPTIONS],
    ids=["check", "lock", "audit", "gate"],
)
def test_no_spelling_is_declared_twice(options):
    flags = [f for o in options for f in o.flags]
    assert len(flags) == len(set(flags))

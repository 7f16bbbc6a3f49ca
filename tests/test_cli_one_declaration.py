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

ENV = tuple(o.envvar for o in fastpath.OPTIONS if o.envvar)  # the variables the gate's options declare
WORKLOAD = ["--", "python", "train.py"]


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
    argv = [*_argv(option, spelling), *WORKLOAD]
    typed = _gate_args(argv)
    assert fastpath.parse(argv) == typed
    assert typed != fastpath.parse(WORKLOAD)


def _gate_args(argv: list[str]) -> GateArgs:
    """What the typer command hands the gate for `argv`."""
    params = _typer_params("gate", argv)
    return GateArgs(
        workload=list(params["workload"] or []),
        reporting=reporting.bundle(params),
        **optionspec.values(GATE, params),
    )


@pytest.mark.parametrize("option", [o for o in fastpath.OPTIONS if o.envvar], ids=lambda o: o.envvar)
def test_the_gate_reads_each_declared_variable_as_typer_does(option, monkeypatch):
    """The options' variables ($SPARKENV_GATE …) come from the same declaration as their spellings: set
    alone, each gives both parsers the same values; an empty one is unset in both."""
    for name in ENV:
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv(option.envvar, "1" if option.flag else "2.5" if option.kind is float else "G1")
    typed = _gate_args(WORKLOAD)
    assert fastpath.parse(WORKLOAD) == typed
    monkeypatch.setenv(option.envvar, "")
    assert fastpath.parse(WORKLOAD) == _gate_args(WORKLOAD) != typed


def test_a_watch_variable_does_not_make_a_bare_gate_watch(monkeypatch):
    """$SPARKENV_GATE_WATCH set in an image's environment: `gate` alone still runs (nothing to watch)."""
    for name in ENV:
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("SPARKENV_GATE_WATCH", "1")
    bare, with_workload = fastpath.parse([]), fastpath.parse(WORKLOAD)
    assert bare is not None and not bare.watch
    assert with_workload is not None and with_workload.watch


def test_a_flag_variable_that_is_no_boolean_is_a_usage_error(monkeypatch):
    from sparkenv.core.errors import SparkenvError

    monkeypatch.setenv("SPARKENV_GATE_DEEP", "maybe")
    with pytest.raises(SparkenvError, match=r"\$SPARKENV_GATE_DEEP: 'maybe' is not a boolean"):
        fastpath.parse(WORKLOAD)


@pytest.mark.parametrize(
    "options",
    [check_args.OPTIONS, lock_args.OPTIONS, audit_args.OPTIONS, fastpath.OPTIONS],
    ids=["check", "lock", "audit", "gate"],
)
def test_no_spelling_is_declared_twice(options):
    flags = [f for o in options for f in o.flags]
    assert len(flags) == len(set(flags))

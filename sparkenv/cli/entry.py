"""The `sparkenv` command's first stop: `sparkenv gate`, `check`, `lock` and `audit` take a fast path that
never imports typer (the gate runs before every workload, check on every commit, lock beside a uv that
takes under a second warm; see sparkenv/core/fastargs.py);
every other command goes to the typer app in sparkenv.cli.commands. All end the same way
(sparkenv/cli/process_exit.py)."""

from __future__ import annotations

import sys


def main() -> None:
    argv = sys.argv[1:]
    _working_folder()
    if argv[:1] == ["gate"]:
        from sparkenv.cli import process_exit

        process_exit.guarded(lambda: _gate(argv[1:]))
    elif argv[:1] and argv[0] in LEAN:
        from sparkenv.cli import process_exit

        process_exit.guarded(lambda: _lean(argv[0], argv[1:]))
    from sparkenv.cli.commands import main as cli_main

    cli_main()


def _working_folder() -> None:
    """Every relative path (inputs, --output-dir, uv's project folder) is resolved against the working
    folder; one deleted under the shell makes os.getcwd() fail wherever it is first asked. Checked once,
    here, before anything reads or writes: exit 2, one line."""
    import os

    try:
        os.getcwd()
    except OSError as exc:
        why = "it was deleted" if isinstance(exc, FileNotFoundError) else exc.strerror
        print(
            f"sparkenv: error: the working folder cannot be used ({why}); cd to an existing folder",
            file=sys.stderr,
        )
        sys.exit(2)


def _gate(argv: list[str]) -> None:
    """Returns only when the typer command should answer instead (--help, an unknown option)."""
    from sparkenv.cli import process_exit
    from sparkenv.core import children
    from sparkenv.gate import entry, fastpath

    def body() -> int | None:
        args = fastpath.parse(argv)
        if args is None:
            return None
        entry.start_early(args)  # NVML and the --deep torch process run while the rest is imported
        entry.finish(entry.run(args))
        return None

    def cleanup() -> str | None:  # a probe started early never outlives the gate
        return "the gate's probes were killed" if children.kill_all() else None

    process_exit.run(body, cleanup=cleanup, finish=entry.finish)


# Commands with a parser of their own (sparkenv/core/fastargs.py): module with parse(argv) and run(args)
LEAN = {
    "check": "sparkenv.resolve.check_args",
    "lock": "sparkenv.resolve.lock_args",
    "audit": "sparkenv.audit.audit_args",
}


def _lean(command: str, argv: list[str]) -> None:
    """Returns only when the typer command should answer instead (--help, an unknown option …)."""
    import importlib

    from sparkenv.cli import process_exit

    module = None

    def body() -> int | None:
        nonlocal module
        module = importlib.import_module(LEAN[command])
        args = module.parse(argv)
        return None if args is None else module.run(args)

    code = process_exit.run(body)
    if code is None:
        return
    if getattr(module, "SKIP_TEARDOWN", False):
        process_exit.leave(code)
    sys.exit(code)

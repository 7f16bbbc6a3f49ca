"""The `sparkenv` command's first stop: `sparkenv gate`, `check`, `lock` and `audit` take a fast path that
never imports typer (the gate runs before every workload, check on every commit, lock beside a uv that
takes under a second warm; see sparkenv/fastargs.py);
every other command goes to the typer app in sparkenv.cli. All end the same way
(sparkenv/process_exit.py)."""

from __future__ import annotations

import sys


def main() -> None:
    argv = sys.argv[1:]
    _working_folder()
    if argv[:1] == ["gate"]:
        from sparkenv import process_exit

        process_exit.guarded(lambda: _gate(argv[1:]))
    elif argv[:1] and argv[0] in LEAN:
        from sparkenv import process_exit

        process_exit.guarded(lambda: _lean(LEAN[argv[0]], argv[1:]))
    from sparkenv.cli import main as cli_main

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
    from sparkenv import children, process_exit, signals
    from sparkenv.errors import SparkenvError
    from sparkenv.gate import entry, fastpath

    process_exit.survive_any_encoding()
    signals.install()
    try:
        args = fastpath.parse(argv)
        if args is None:
            return
        entry.start_early(args)  # NVML and the --deep torch process run while the rest is imported
        entry.finish(entry.run(args))
    except process_exit.OutputFailed:
        children.kill_all()
        raise
    except SparkenvError as exc:
        children.kill_all()  # a probe started early never outlives the gate
        print(f"sparkenv: error: {exc}", file=sys.stderr)
        entry.finish(exc.exit_code)
    except KeyboardInterrupt:  # before the probes' own handler is in place (gate/entry.py)
        if children.kill_all():
            signals.cleaned("the gate's probes were killed")
        process_exit.stopped(signals.received())
    except Exception as exc:
        children.kill_all()
        process_exit.internal_error(exc)


# Commands with a parser of their own (sparkenv/fastargs.py): module with parse(argv) and run(args)
LEAN = {
    "check": "sparkenv.resolve.check_args",
    "lock": "sparkenv.resolve.lock_args",
    "audit": "sparkenv.audit.audit_args",
}


def _lean(module_name: str, argv: list[str]) -> None:
    """Returns only when the typer command should answer instead (--help, an unknown option …)."""
    import importlib

    from sparkenv import process_exit, signals
    from sparkenv.errors import SparkenvError

    process_exit.survive_any_encoding()
    signals.install()
    try:
        module = importlib.import_module(module_name)
        args = module.parse(argv)
        if args is None:
            return
        code = module.run(args)
    except process_exit.OutputFailed:
        raise  # guarded() says it in one line
    except SparkenvError as exc:
        print(f"sparkenv: error: {exc}", file=sys.stderr)
        sys.exit(exc.exit_code)
    except KeyboardInterrupt:
        process_exit.stopped(signals.received())
    except Exception as exc:
        process_exit.internal_error(exc)
    if getattr(module, "SKIP_TEARDOWN", False):
        process_exit.leave(code)
    sys.exit(code)

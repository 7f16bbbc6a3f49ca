"""The `sparkenv` command's first stop: `sparkenv gate` takes a fast path that never imports typer
(the gate runs before every workload; see sparkenv/gate/fastpath.py); every other command goes to the
typer app in sparkenv.cli. Both end the same way (sparkenv/process_exit.py)."""

from __future__ import annotations

import sys


def main() -> None:
    argv = sys.argv[1:]
    if argv[:1] == ["gate"]:
        from sparkenv import process_exit

        process_exit.guarded(lambda: _gate(argv[1:]))
    from sparkenv.cli import main as cli_main

    cli_main()


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

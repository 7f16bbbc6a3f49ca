"""The `sparkenv` command's first stop: `sparkenv gate` takes a fast path that never imports typer
(the gate runs before every workload; see sparkenv/gate/fastpath.py); every other command goes to the
typer app in sparkenv.cli."""

from __future__ import annotations

import sys


def main() -> None:
    argv = sys.argv[1:]
    if argv[:1] == ["gate"]:
        from sparkenv.errors import SparkenvError
        from sparkenv.gate import entry, fastpath

        try:
            args = fastpath.parse(argv[1:])
            if args is not None:
                entry.finish(entry.run(args))
        except SparkenvError as exc:
            print(f"sparkenv: error: {exc}", file=sys.stderr)
            entry.finish(exc.exit_code)
        except KeyboardInterrupt:
            print("sparkenv: interrupted", file=sys.stderr)
            entry.finish(130)
    from sparkenv.cli import main as cli_main

    cli_main()

"""The `sparkenv` command line. Thin: parse options, call a stage, hand the report to a renderer.

Stage modules are imported inside the commands so that `sparkenv --help` and each command pay only
for what they use (start-up time counts: the gate runs before every workload).
"""

from __future__ import annotations

import os
import sys
from typing import Annotated, Optional

import typer

from sparkenv import cli_options as opts

app = typer.Typer(
    name="sparkenv",
    help="Make NVIDIA DGX Spark (GB10) Python environments known-good before a long run starts.\n\n"
    "Each finding is one line, G-number first (G1–G10, see `sparkenv explain`). Exit codes: 0 no FAIL, "
    "1 a FAIL (or a WARN under --strict), 2 bad usage or unreadable input, 3 a needed service is missing.",
    no_args_is_help=True,
    add_completion=False,
    pretty_exceptions_enable=False,
    rich_markup_mode=None,
)


@app.command()
def audit(
    target: Annotated[
        Optional[str],  # noqa: UP045 - typer needs Optional on Python 3.10
        typer.Argument(
            metavar="TARGET",
            help="A venv folder, a site-packages folder or a Python interpreter. Default: $VIRTUAL_ENV, "
            "else the environment sparkenv runs in.",
            show_default=False,
        ),
    ] = None,
    lock: Annotated[
        Optional[str],  # noqa: UP045
        typer.Option(
            "--lock",
            metavar="FILE",
            help="The project's lock (pylock.*.toml or a hashed requirements file): torch, triton, "
            "xformers and transformers are compared with it (G9).",
        ),
    ] = None,
    machine: Annotated[
        Optional[str],  # noqa: UP045
        typer.Option(
            "--machine",
            metavar="ARCH",
            help="The environment's CPU (aarch64, x86_64). Default: read from its interpreter.",
        ),
    ] = None,
    root: Annotated[
        Optional[str],  # noqa: UP045
        typer.Option(
            "--root",
            metavar="DIR",
            help="Read container and NGC markers under DIR (a mounted image) instead of /.",
        ),
    ] = None,
    json_out: Annotated[bool, opts.JSON] = False,
    report: Annotated[Optional[str], opts.REPORT] = None,  # noqa: UP045
    junit: Annotated[Optional[str], opts.JUNIT] = None,  # noqa: UP045
    strict: Annotated[bool, opts.STRICT] = False,
    quiet: Annotated[bool, opts.QUIET] = False,
) -> None:
    """Inspect an installed environment from outside — nothing is imported or run — for G1, G2 and G9.

    G1: every distribution's CUDA major, from its name, version label, Requires-Dist, install paths and
    the DT_NEEDED entries of its shared objects; CPU-only torch; shared objects of the wrong CPU.
    G2: where flash-attn came from and whether it fits; Unsloth next to it without the SDPA override.
    G9: container markers, NGC torch replaced by pip, drift against --lock.

    Examples:

      sparkenv audit                      # the current environment

      sparkenv audit .venv --lock lockfiles/pylock.ngc-25-11.toml

      sparkenv audit /usr/bin/python3 --junit audit.xml -q
    """
    from sparkenv.audit.run import audit as run_audit
    from sparkenv.render.emit import emit

    result = run_audit(target, lock=lock, machine=machine, root=root)
    raise typer.Exit(emit(result, json_out=json_out, report=report, junit=junit, strict=strict, quiet=quiet))


@app.command()
def explain(
    gotcha: Annotated[
        Optional[str],  # noqa: UP045
        typer.Argument(
            metavar="G", help="G1 … G10 (or 1 … 10). Without it, list all ten.", show_default=False
        ),
    ] = None,
) -> None:
    """Explain a failure mode: symptom, cause, what sparkenv checks and at which stage, and the fix."""
    from sparkenv import gotchas

    typer.echo(gotchas.explain(gotchas.lookup(gotcha)) if gotcha else gotchas.listing(), nl=False)


# Commands of the other stages live beside their stage (sparkenv/<stage>/commands.py) and add themselves
# here through register(app); each keeps its heavy imports inside the command, so start-up stays cheap.
STAGE_COMMANDS: tuple[str, ...] = (
    "sparkenv.build.commands",
    "sparkenv.gate.commands",
    "sparkenv.patches.commands",
    "sparkenv.resolve.commands",
)


def _register_stages() -> None:
    import importlib

    for module in STAGE_COMMANDS:
        importlib.import_module(module).register(app)


_register_stages()


def main() -> None:
    from sparkenv.errors import SparkenvError

    try:
        # Without standalone mode click returns the exit code of typer.Exit instead of raising it.
        code = app(standalone_mode=False)
        if code == 130:  # typer turns Ctrl-C into a silent Exit(130); say what happened
            print("sparkenv: interrupted", file=sys.stderr)
        sys.exit(code if isinstance(code, int) else 0)
    except SparkenvError as exc:
        print(f"sparkenv: error: {exc}", file=sys.stderr)
        sys.exit(exc.exit_code)
    except typer.Exit as exc:
        sys.exit(exc.exit_code)
    except typer.Abort:
        print("sparkenv: interrupted", file=sys.stderr)
        sys.exit(130)
    except KeyboardInterrupt:
        print("sparkenv: interrupted", file=sys.stderr)
        sys.exit(130)
    except Exception as exc:
        if hasattr(exc, "show") and isinstance(getattr(exc, "exit_code", None), int):
            exc.show()  # click's usage errors: usage line + "Error: …", exit 2
            sys.exit(exc.exit_code)
        if os.environ.get("SPARKENV_DEBUG"):
            raise
        print(
            f"sparkenv: internal error: {exc.__class__.__name__}: {exc} (set SPARKENV_DEBUG=1 for the "
            "traceback, and please report it)",
            file=sys.stderr,
        )
        sys.exit(70)

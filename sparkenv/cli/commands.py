"""The `sparkenv` command line. Thin: parse options, call a stage, hand the report to a renderer.

Stage modules are imported inside the commands so that `sparkenv --help` and each command pay only
for what they use (start-up time counts: the gate runs before every workload).
"""

from __future__ import annotations

import sys
from typing import Annotated, Optional

import typer

from sparkenv.cli import process_exit
from sparkenv.core.report import GotchaId

app = typer.Typer(
    name="sparkenv",
    help="Make NVIDIA DGX Spark (GB10) Python environments known-good before a long run starts.\n\n"
    f"Each finding is one line, G-number first ({GotchaId.span()}, see `sparkenv explain`). "
    "Exit codes: 0 no FAIL, 1 a FAIL (or a WARN under --strict), 2 bad usage or unreadable input, "
    "3 a needed service is missing (or stdout cannot be written), "
    "130/143/129 stopped by Ctrl-C/SIGTERM/SIGHUP (after cleaning up), "
    "141 stdout closed early (broken pipe), 70 a bug in sparkenv (please report). "
    "Kept answers go to $SPARKENV_CACHE_DIR, else $XDG_CACHE_HOME/sparkenv, else ~/.cache/sparkenv "
    "(`sparkenv cache dir|clean`).",
    no_args_is_help=True,
    # --install-completion / --show-completion for bash, zsh, fish and PowerShell (typer's, via shellingham)
    add_completion=True,
    # -h on every command, as on gate; help fills the terminal (click caps it at 80 columns otherwise),
    # pipes get $COLUMNS or 80.
    context_settings={"help_option_names": ["-h", "--help"], "max_content_width": 160},
    pretty_exceptions_enable=False,
    rich_markup_mode=None,
)


def _readable_usage() -> None:
    """Usage lines the POSIX way: `INPUT...` (required, repeatable), `[TARGET]` (optional) — typer writes
    `{INPUT...}...` and `[[INPUT]...]...`. A metavar that already spells its brackets or dots is kept."""
    from typer import core

    argument = getattr(core, "TyperArgument", None)
    if argument is None or not hasattr(argument, "_usage_display_name"):
        return  # another typer: keep its usage lines

    def display(self) -> str:  # type: ignore[no-untyped-def]
        name = str(self.metavar or self.name or "").upper() if self.metavar is None else str(self.metavar)
        if "[" in name or name.endswith("..."):
            return name
        if self.nargs != 1:
            name += "..."
        return name if self.required else f"[{name}]"

    argument._usage_display_name = display


_readable_usage()


def _version_line() -> str:
    from importlib import metadata
    from pathlib import Path

    try:
        version = metadata.version("sparkenv")
    except metadata.PackageNotFoundError:
        version = "0+unknown (not installed)"
    where = Path(__file__).resolve().parents[1]
    return f"sparkenv {version} ({where}; Python {sys.version.split()[0]})"


def _show_version(value: bool) -> None:
    if value:
        typer.echo(_version_line())
        raise typer.Exit(0)


@app.callback()
def _root(
    version: Annotated[
        bool,
        typer.Option(
            "--version",
            "-V",
            help="Print sparkenv's version, where it runs from and the Python, then exit.",
            callback=_show_version,
            is_eager=True,
        ),
    ] = False,
    color: Annotated[
        str,
        typer.Option(
            "--color",
            metavar="auto|always|never",
            help="Colour the status words: auto (a terminal, unless NO_COLOR; FORCE_COLOR forces it), "
            "always, never.",
        ),
    ] = "auto",
    strict_config: Annotated[
        bool,
        typer.Option(
            "--strict-config",
            envvar="SPARKENV_STRICT_CONFIG",
            help="An unknown key in pyproject.toml's [tool.sparkenv] is an error (exit 2), not a warning.",
        ),
    ] = False,
) -> None:
    """Make NVIDIA DGX Spark (GB10) Python environments known-good before a long run starts."""
    if color not in ("auto", "always", "never"):
        raise typer.BadParameter(f"{color!r} is not one of auto, always, never", param_hint="--color")
    if color != "auto":
        from sparkenv.render import colour

        colour.choose(color)
    if strict_config:  # read where [tool.sparkenv] is read (lock/inputs.unknown_keys)
        import os

        os.environ["SPARKENV_STRICT_CONFIG"] = "1"


def explain(
    gotcha: Annotated[
        Optional[str],  # noqa: UP045
        typer.Argument(
            metavar="G",
            help=f"{GotchaId.span()} (or the number alone). Without it, list them all.",
            show_default=False,
        ),
    ] = None,
) -> None:
    """Explain a failure mode: symptom, cause, what sparkenv checks and at which stage, and the fix."""
    from sparkenv import gotchas

    # sys.stdout, not typer.echo: click re-wraps an ASCII stdout as UTF-8, which the errors="replace"
    # set up in main() would not cover (the registry's text has typographic dashes).
    sys.stdout.write(gotchas.explain(gotchas.lookup(gotcha)) if gotcha else gotchas.listing())


# Commands of the other stages live beside their stage (sparkenv/<stage>/commands.py) and add themselves
# here through register(app); each keeps its heavy imports inside the command, so start-up stays cheap.
# Listed in the order of the stages, earliest first: `sparkenv --help` shows them so.
STAGE_COMMANDS: tuple[str, ...] = (
    "sparkenv.host.commands",
    "sparkenv.resolve.commands",
    "sparkenv.image.commands",
    "sparkenv.audit.commands",
    "sparkenv.gate.commands",
    "sparkenv.watch.commands",
    "sparkenv.attest.commands",
    "sparkenv.patches.commands",
    "sparkenv.cli.cache_commands",
)


def _register_stages() -> None:
    import importlib

    for module in STAGE_COMMANDS:
        importlib.import_module(module).register(app)
    app.command()(explain)


_register_stages()


def main() -> None:
    process_exit.guarded(_main)


def _main() -> None:
    from sparkenv.core import signals

    def body() -> int:
        try:
            # Without standalone mode click returns the exit code of typer.Exit instead of raising it.
            code = app(standalone_mode=False)
        except typer.Exit as exc:
            return exc.exit_code
        except typer.Abort:
            raise KeyboardInterrupt from None
        except process_exit.OutputFailed:
            raise
        except Exception as exc:
            if hasattr(exc, "show") and isinstance(getattr(exc, "exit_code", None), int):
                exc.show()  # click's usage errors: usage line + "Error: …", exit 2
                return exc.exit_code
            raise
        if code == 130:  # typer turns Ctrl-C (and our SIGTERM/SIGHUP) into a silent Exit(130)
            _stopped(signals.received())
        return code if isinstance(code, int) else 0

    sys.exit(process_exit.run(body))


_stopped = process_exit.stopped

"""`sparkenv check` and `sparkenv lock`: the resolve stage on the command line."""

from __future__ import annotations

from typing import Annotated, Any, Optional

import typer

from sparkenv.cli import options as opts
from sparkenv.resolve.options import CHECK, LOCK

_INPUTS_HELP = "Requirements files (pip syntax, -r/-c includes) and/or pyproject.toml files"
_CHECK_INPUTS = (
    f"{_INPUTS_HELP}; - reads a requirements file from standard input (its includes are relative to the "
    "current folder)."
)
_LOCK_INPUTS = (
    f"{_INPUTS_HELP}. Not - (standard input): a lock records its inputs so that `lock --check` reads "
    "them again."
)


def register(app: typer.Typer) -> None:
    app.command("check")(check)
    app.command("lock")(lock)


@opts.reporting(options=CHECK)
def check(
    inputs: Annotated[
        Optional[list[str]],  # noqa: UP045 - none when -r names them
        typer.Argument(metavar="[INPUT]...", help=_CHECK_INPUTS, show_default=False),
    ] = None,
    *,
    values: dict[str, Any],
    reporting: opts.ReportOptions,
) -> None:
    """The policy on declared requirements, offline and fast (pre-commit, CI): G1, G2, G9.

    G1: CUDA-12 names and +cu12x/+cpu labels, wheel URLs for another CPU, CUDA-12 indexes.
    G2: flash-attn (and other CUDA builds) that would compile for an hour, or replace the base's.
    G9: pins that would replace what the base provides; with --pip also drift-prone packages not
    pinned exactly and the Unsloth family installed with its dependencies. Without --pip the file is
    judged as `sparkenv lock` installs it (every package pinned, the Unsloth family in its own --no-deps
    stage), by the same rule lock calls: check and lock give the same verdict per finding.

    Examples:

      sparkenv check requirements.txt          # or: sparkenv check -r requirements.txt

      cat requirements.txt | sparkenv check -

      sparkenv check pyproject.toml --profile spark-bare --strict

      sparkenv check --lock-input lockfiles/inputs/playbook-unsloth.txt   # what `sparkenv lock` reads
    """
    from sparkenv.resolve import check_args

    raise typer.Exit(check_args.run(check_args.CheckArgs.of(inputs or [], values, reporting)))


@opts.reporting(options=LOCK)
def lock(
    inputs: Annotated[
        Optional[list[str]],  # noqa: UP045
        typer.Argument(metavar="[INPUT]...", help=_LOCK_INPUTS, show_default=False),
    ] = None,
    *,
    values: dict[str, Any],
    reporting: opts.ReportOptions,
) -> None:
    """Resolve for the target with uv, check the resolved set, write a PEP 751 lock + hashed requirements.

    The base's packages (torch, triton, flash-attn …) are excluded from resolution, and every requirement
    on them must accept the base's exact version (else G9 FAIL with the chain). The Unsloth family is
    resolved with its own requirements (the lock is closed) and installs in its own --no-deps stage.
    Nothing is written when a FAIL or an unreadable file's metadata remains in the report as shown (a FAIL
    you --ignore or --waive does not withhold the lock: `verdict: ready` means it was written). A re-lock
    keeps the versions of the lock it replaces where the inputs allow (--upgrade, --upgrade-package). On a
    terminal, one line per phase goes to stderr (not under -q, --json or when stderr is not a terminal).

    Examples:

      sparkenv lock requirements.txt                      # lockfiles/pylock.ngc-25-11.toml

      sparkenv lock -r requirements.txt -r extra.txt      # pip's spelling

      sparkenv lock pyproject.toml --profile ngc-26.01

      sparkenv lock --check                               # is every shipped lock current?

      sparkenv lock req.txt --exclude-newer 2026-11-30    # reproducible: as the index was that day

      sparkenv lock req.txt -P transformers              # let one package move, keep the rest

      sparkenv lock vllm.txt --allow-replace torch        # replace the image's torch, on purpose
    """
    from sparkenv.resolve import lock_args

    raise typer.Exit(lock_args.run(lock_args.LockArgs.of(inputs or [], values, reporting)))

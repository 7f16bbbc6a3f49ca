"""`sparkenv check`, `sparkenv lock` and `sparkenv profiles`: the resolve stage on the command line."""

from __future__ import annotations

from typing import Annotated, Any, Optional

import typer

from sparkenv import cli_options as opts
from sparkenv.resolve.options import CHECK, LOCK

_INPUTS_HELP = "Requirements files (pip syntax, -r/-c includes) and/or pyproject.toml files."


def register(app: typer.Typer) -> None:
    app.command("check")(check)
    app.command("lock")(lock)
    app.add_typer(_profiles_app(), name="profiles")


@opts.reporting(options=CHECK)
def check(
    inputs: Annotated[list[str], typer.Argument(metavar="INPUT...", help=_INPUTS_HELP, show_default=False)],
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

      sparkenv check requirements.txt

      sparkenv check pyproject.toml --profile spark-bare --strict

      sparkenv check --lock-input lockfiles/inputs/playbook-unsloth.txt   # what `sparkenv lock` reads
    """
    from sparkenv.resolve import check_args

    raise typer.Exit(check_args.run(check_args.CheckArgs.of(inputs, values, reporting)))


@opts.reporting(options=LOCK)
def lock(
    inputs: Annotated[
        Optional[list[str]],  # noqa: UP045
        typer.Argument(metavar="[INPUT]...", help=_INPUTS_HELP, show_default=False),
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

      sparkenv lock pyproject.toml --profile ngc-26.01

      sparkenv lock --check                               # is every shipped lock current?

      sparkenv lock req.txt --exclude-newer 2026-11-30    # reproducible: as the index was that day

      sparkenv lock req.txt -P transformers              # let one package move, keep the rest

      sparkenv lock vllm.txt --allow-replace torch        # replace the image's torch, on purpose
    """
    from sparkenv.resolve import lock_args

    raise typer.Exit(lock_args.run(lock_args.LockArgs.of(inputs or [], values, reporting)))


def _profiles_app() -> typer.Typer:
    group = typer.Typer(
        help="The resolution targets (NGC images, the Unsloth and vLLM images, a bare Spark) and writing "
        "your own.\n\nWithout a subcommand: list the shipped profiles.",
        invoke_without_command=True,
        no_args_is_help=False,
        rich_markup_mode=None,
    )
    group.callback()(profiles_list)
    group.command("new")(profiles_new)
    return group


def profiles_list(
    ctx: typer.Context,
    json_out: Annotated[bool, typer.Option("--json", help="Print the profiles as JSON.")] = False,
) -> None:
    """List the shipped profiles: image, Python, CUDA, platform, what each base provides, source."""
    if ctx.invoked_subcommand:
        return
    import json
    from dataclasses import asdict

    from sparkenv import profiles

    shipped = profiles.shipped()
    default = profiles.default_name()
    if json_out:
        typer.echo(
            json.dumps({"default": default, "profiles": [asdict(p) for p in shipped.values()]}, indent=2)
        )
        return
    for p in shipped.values():
        mark = " (default)" if p.name == default else ""
        typer.echo(f"{p.name}{mark}")
        image = p.image or "no base image"
        typer.echo(f"    {image} · Python {p.python_minor} · CUDA {p.cuda} · {p.python_platform}")
        if p.provides:
            known = [f"{k} {v}" for k, v in p.provides.items() if v]
            unknown = [k for k, v in p.provides.items() if not v]
            text = ", ".join(known)
            if unknown:
                text += ("; " if text else "") + "version not recorded: " + ", ".join(unknown)
            typer.echo(f"    provides {text}")
        if p.components:
            typer.echo(
                "    holds " + ", ".join(f"{k} {v or '(not recorded)'}" for k, v in p.components.items())
            )
        if p.unverified:
            typer.echo(f"    UNVERIFIED (no public source confirmed): {', '.join(p.unverified)}")
        typer.echo(f"    reviewed {p.reviewed or 'never'} · source {p.source}")
    typer.echo(
        "\nYour own target: a TOML file with name and image (the rest defaults to the Spark's), or "
        "`sparkenv profiles new NAME --from-image IMAGE`; use it with --profile FILE."
    )


def profiles_new(
    name: Annotated[str, typer.Argument(metavar="NAME", help="The profile's name (a-z, 0-9, . _ -).")],
    from_image: Annotated[
        str,
        typer.Option(
            "--from-image",
            metavar="IMAGE",
            help="The image to read (pulled when absent). It runs once, with its entrypoint bypassed and no "
            "network.",
        ),
    ],
    output: Annotated[
        Optional[str],  # noqa: UP045
        typer.Option("--output", "-o", metavar="FILE", help="Where to write it. Default: ./NAME.toml."),
    ] = None,
    platform: Annotated[
        Optional[str],  # noqa: UP045
        typer.Option("--platform", metavar="OS/ARCH", help="The platform to pull, e.g. linux/arm64."),
    ] = None,
    force: Annotated[bool, typer.Option("--force", help="Replace FILE when it exists.")] = False,
) -> None:
    """Write a complete profile from an image: Python, CUDA, glibc/manylinux, platform, every distribution
    it provides with its version, its environment and its digest (needs Docker: sparkenv[build]).

    Examples:

      sparkenv profiles new ngc-26.01 --from-image nvcr.io/nvidia/pytorch:26.01-py3

      sparkenv profiles new my-unsloth --from-image unsloth-dgx-spark -o profiles/my-unsloth.toml
    """
    from sparkenv.resolve import profile_from_image

    dest, text = profile_from_image.write_profile(name, from_image, output, force, platform)
    typer.echo(profile_from_image.summary(dest, text))

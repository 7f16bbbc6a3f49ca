"""`sparkenv build`: a known-good image from a profile + lock, tagged only after it audited itself; and
`sparkenv profiles`: the targets, and a new one read from an image."""

from __future__ import annotations

import sys
from dataclasses import asdict
from typing import Annotated, Optional

import typer

from sparkenv.cli import options as opts


def register(app: typer.Typer) -> None:
    app.command("build")(build)
    app.add_typer(_profiles_app(), name="profiles")


@opts.reporting()
def build(
    inputs: Annotated[
        Optional[list[str]],  # noqa: UP045 - typer needs Optional on Python 3.10
        typer.Argument(
            metavar="[INPUT]...",
            help="Requirements files / pyproject.toml to lock first (as `sparkenv lock`); instead of --lock.",
            show_default=False,
        ),
    ] = None,
    profile: Annotated[
        Optional[str],  # noqa: UP045
        typer.Option("--profile", metavar="NAME|FILE", help="The target profile. Default: the lock's."),
    ] = None,
    lock: Annotated[
        Optional[str],  # noqa: UP045
        typer.Option(
            "--lock",
            metavar="FILE",
            help="A pylock.<profile>.toml written by `sparkenv lock` (its hashed requirements beside it). "
            "Default: lockfiles/pylock.<default profile>.toml.",
        ),
    ] = None,
    tag: Annotated[
        Optional[str],  # noqa: UP045
        typer.Option("--tag", "-t", metavar="NAME[:TAG]", help="Default: sparkenv/<profile>:latest."),
    ] = None,
    push: Annotated[
        Optional[str],  # noqa: UP045
        typer.Option(
            "--push",
            metavar="REGISTRY/NAME[:TAG]",
            help="After the audit passed, tag the image REGISTRY/NAME:TAG too, push it and print its digest "
            "(REGISTRY/NAME@sha256:…) for `docker pull` on every node.",
        ),
    ] = None,
    base: Annotated[
        Optional[str],  # noqa: UP045
        typer.Option("--base", metavar="IMAGE", help="Build on IMAGE instead of the profile's (a mirror)."),
    ] = None,
    platform: Annotated[
        Optional[str],  # noqa: UP045
        typer.Option(
            "--platform",
            metavar="OS/ARCH",
            help="linux/aarch64 (DGX Spark; linux/arm64 works too) or linux/amd64; the built image's "
            "architecture is checked against it. Default: the lock's platform.",
        ),
    ] = None,
    ca_bundle: Annotated[
        Optional[str],  # noqa: UP045
        typer.Option(
            "--ca-bundle",
            metavar="FILE",
            help="CA bundle pip trusts while downloading in the build (a TLS-intercepting proxy); only the "
            "download stage sees it, the image does not keep it. Default: $PIP_CERT, else $SSL_CERT_FILE.",
        ),
    ] = None,
    sdpa: Annotated[
        bool, typer.Option("--sdpa", help="The project asks for SDPA: install the G2 override's .pth.")
    ] = False,
    network: Annotated[
        Optional[str],  # noqa: UP045
        typer.Option("--network", metavar="MODE", help="Network of the build's RUN steps (host, none …)."),
    ] = None,
    output_dir: Annotated[
        Optional[str],  # noqa: UP045
        typer.Option("--output-dir", metavar="DIR", help="Where a lock from INPUTs goes."),
    ] = None,
    no_cache: Annotated[bool, typer.Option("--no-cache", help="Build every step again.")] = False,
    dry_run: Annotated[
        bool,
        typer.Option("--dry-run", help="Print the Dockerfile and the context's files; no Docker needed."),
    ] = False,
    gpu: Annotated[
        Optional[str],  # noqa: UP045
        typer.Option(
            "--gpu",
            metavar="CAP",
            help="The GPU the image's extensions must run on (G7 in its self-audit): 12.1 (GB10, the "
            "default), 9.0 (H100/H200) …; `none` skips the kernel check. An image whose kernels cannot run "
            "there is not tagged.",
        ),
    ] = None,
    driver: Annotated[
        Optional[str],  # noqa: UP045
        typer.Option(
            "--driver",
            metavar="VERSION",
            help="The host driver the image will run on (e.g. 580.95.05): a profile whose CUDA needs a newer "
            "one is a G1 WARN. Default: this machine's driver, when it has one.",
        ),
    ] = None,
    *,
    reporting: opts.ReportOptions,
) -> None:
    """Build an image from a lock on its NGC base and tag it only when its own audit has no FAIL.

    The lock's stages install with pip --no-deps --require-hashes; a step fails the build when a package
    the base provides was replaced; sparkenv goes in from a wheel of the sparkenv running this command
    (installed or editable); the gate runs as the entrypoint in front of NGC's
    (SPARKENV_GATE=strict|warn|off). Then `sparkenv audit --json` runs in a throw-away container; its
    report is kept next to the lock.

    Examples:

      sparkenv build --lock lockfiles/pylock.ngc-25-11.toml --tag my/unsloth:1

      sparkenv build requirements.txt --profile ngc-26.01 --sdpa

      sparkenv build --dry-run
    """
    from sparkenv.image.run import BuildRequest
    from sparkenv.image.run import build as run_build
    from sparkenv.render.emit import emit

    outcome = run_build(
        BuildRequest(
            inputs=tuple(inputs or ()),
            profile=profile,
            lock=lock,
            tag=tag,
            push=push,
            base=base,
            platform=platform,
            ca_bundle=ca_bundle,
            sdpa=sdpa,
            network=network,
            output_dir=output_dir,
            no_cache=no_cache,
            dry_run=dry_run,
            reporting=reporting,
            gpu=gpu,
            driver=driver,
        )
    )
    if outcome.report is None:
        sys.stdout.write(outcome.dry_run)
        return
    # the tag line first, on stdout beside the text report; on stderr when stdout is JSON or a step failed
    to_stderr = reporting.machine_stdout or outcome.failed
    print(outcome.message, file=sys.stderr if to_stderr else sys.stdout, flush=True)
    emit(outcome.report, reporting)
    if outcome.pinned:
        print(outcome.pinned, flush=True)  # the last line alone: REF=$(sparkenv build … --push … | tail -1)
    raise typer.Exit(outcome.code)


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

    from sparkenv.environment import profiles

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
    from sparkenv.image import profile_from_image

    dest, text = profile_from_image.write_profile(name, from_image, output, force, platform)
    typer.echo(profile_from_image.summary(dest, text))

"""`sparkenv build`: a known-good image from a profile + lock, tagged only after it audited itself."""

from __future__ import annotations

import os
import time
from pathlib import Path
from typing import Annotated, Optional

import typer

from sparkenv import cli_options as opts


def register(app: typer.Typer) -> None:
    app.command("build")(build)


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
    base: Annotated[
        Optional[str],  # noqa: UP045
        typer.Option("--base", metavar="IMAGE", help="Build on IMAGE instead of the profile's (a mirror)."),
    ] = None,
    platform: Annotated[
        Optional[str],  # noqa: UP045
        typer.Option(
            "--platform",
            metavar="OS/ARCH",
            help="linux/arm64 (DGX Spark) or linux/amd64; the built image's architecture is checked "
            "against it. Default: the lock's platform.",
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
        str, typer.Option("--output-dir", metavar="DIR", help="Where a lock from INPUTs goes.")
    ] = "lockfiles",
    no_cache: Annotated[bool, typer.Option("--no-cache", help="Build every step again.")] = False,
    dry_run: Annotated[
        bool,
        typer.Option("--dry-run", help="Print the Dockerfile and the context's files; no Docker needed."),
    ] = False,
    quiet: Annotated[bool, opts.QUIET] = False,
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
    from sparkenv.build import context, engine, runtime
    from sparkenv.errors import SparkenvError
    from sparkenv.render.emit import write_atomic
    from sparkenv.resolve import profiles

    started = time.perf_counter()
    if tag is not None:
        from sparkenv.build.reference import check_tag

        check_tag(tag)  # before any work, --dry-run too: a bad name must not cost a whole build
    if inputs and lock:
        raise SparkenvError("give either --lock FILE or INPUT files to lock, not both")
    if inputs:
        from sparkenv.render.emit import emit
        from sparkenv.resolve import run

        result = run.lock(inputs, profile, None, output_dir, None, [], None, 600.0)
        if result.exit_code():
            raise typer.Exit(emit(result, json_out=False, report=None, junit=None, strict=False, quiet=True))
        # the lock is named by the profile name (a profile file's too): pylock.<name with dots as dashes>.toml
        lock_path = Path(output_dir) / f"pylock.{str(result.profile).replace('.', '-')}.toml"
    else:
        lock_path = Path(lock or f"lockfiles/pylock.{profiles.load(profile).file_stem}.toml")
    locked = context.read_lock(lock_path)
    prof = context.profile_for(locked, profile)
    source = "--platform" if platform else f"{locked.pylock}: [tool.sparkenv] platform ="
    platform = platform or str(locked.tool.get("platform") or prof.platform)
    if platform not in profiles.PLATFORMS:  # name where the bad value came from: the option or the lock
        raise SparkenvError(f"{source} {platform!r}: not one of {', '.join(sorted(profiles.PLATFORMS))}")
    machine = profiles.PLATFORMS[platform]
    ca = ca_bundle or os.environ.get("PIP_CERT") or os.environ.get("SSL_CERT_FILE")
    ca_path = Path(ca) if ca else None
    if ca_path is not None and not ca_path.is_file():
        if ca_bundle:  # named on the command line: say what it really is (missing, a FIFO, a folder …)
            from sparkenv import safe_read

            try:
                safe_read.require_regular(ca_path, what="a CA bundle (PEM)")
            except safe_read.UnreadableFile as exc:
                raise SparkenvError(f"{ca_bundle}: not a usable CA bundle: {exc.reason}") from None
        ca_path = None
    target = runtime.Target(prof.python_minor, machine, prof.glibc or "2.17")
    wheels = [runtime.sparkenv_wheel(), *runtime.dependency_wheels(target)]
    ref = tag or f"sparkenv/{prof.file_stem}:latest"
    plan = context.Plan(prof, locked, context.default_base(prof, base), _version(), ca_path, sdpa, wheels)

    if dry_run:
        files = plan.files()
        typer.echo(files["Dockerfile"][0].decode(), nl=False)
        typer.echo(f"# context ({len(files)} files):")
        for name, (data, _) in sorted(files.items()):
            typer.echo(f"#   {name} ({len(data)} bytes)")
        typer.echo(f"# would tag {ref} after `sparkenv audit --json` in the image has no FAIL")
        return

    from sparkenv import signals

    client = engine.connect()
    signals.on_interrupt(f"no tag moved ({ref})")  # said if Ctrl-C/SIGTERM/SIGHUP stops the build
    plan.base = _resolve_base(client, plan.base, prof, base, quiet)
    progress = engine.Progress(quiet)
    if not quiet:
        typer.echo(f"sparkenv build: {prof.name} + {locked.pylock.name} on {plan.base.ref}", err=True)
    image_id = engine.build(client, context.tar(plan.files()), platform, no_cache, network, progress)
    arch = engine.architecture(client, image_id)
    wanted = context.ARCH[machine]
    if arch != wanted:
        raise engine.BuildFailed(
            f"the image is {arch}, not {wanted} ({platform}): the engine ignored the platform; build on a "
            f"{wanted} machine (or with binfmt/qemu for {wanted}); nothing was tagged"
        )
    checked = engine.verify(client, image_id)
    if checked.report is not None:
        write_atomic(str(locked.report_path), checked.raw)
    short = image_id.removeprefix("sha256:")[:12]
    took = time.perf_counter() - started
    if checked.report is None or checked.exit_code not in (0, 1):
        last = (checked.stderr.strip().splitlines() or ["no output"])[-1]
        raise engine.BuildFailed(
            f"the image's audit did not run (exit {checked.exit_code}: {last}); image {short} left untagged"
        )
    for line in checked.problems():
        typer.echo(line)
    verdict = checked.report.get("verdict", "?")
    if checked.fails:
        typer.echo(
            f"sparkenv build: image {short} NOT tagged {ref}: its audit found {checked.fails} FAIL "
            f"(report: {locked.report_path})"
        )
        raise typer.Exit(1)
    engine.tag(client, image_id, ref)
    signals.forget(f"no tag moved ({ref})")
    typer.echo(
        f"sparkenv build: tagged {ref} (image {short}, {arch}; {progress.total} steps, {progress.cached} "
        f"cached; audit: {verdict}, report {locked.report_path}; {took:.1f} s)"
    )


def _version() -> str:
    from importlib import metadata

    try:
        return metadata.version("sparkenv")
    except metadata.PackageNotFoundError:
        return "0+unknown"


def _resolve_base(client, base, prof, override: str | None, quiet: bool):  # type: ignore[no-untyped-def]
    """FROM by digest when the profile's digest is what is here; record the digest actually used."""
    import typer

    from sparkenv.build import context, engine

    if override:
        img = engine.local_image(client, override)
        if img is None:
            return base  # the builder pulls it, or says how it failed
        digests = img.attrs.get("RepoDigests") or []
        return context.Base(override, digests[0].split("@", 1)[1] if digests else img.id, override)
    img = engine.local_image(client, prof.image)
    if img is None:
        return base
    digests = [d.split("@", 1)[1] for d in img.attrs.get("RepoDigests") or [] if "@" in d]
    if prof.digest and prof.digest in digests:
        return base
    used = digests[0] if digests else img.id
    if not quiet:
        typer.echo(
            f"sparkenv build: note: local {prof.image} is {used[:19]}…, not the profile's "
            f"{prof.digest[:19] or 'unrecorded digest'}…; building on the local image (refresh the profile)",
            err=True,
        )
    return context.Base(f"{prof.image}@{used}" if digests else prof.image, used, prof.image)

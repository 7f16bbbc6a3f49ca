"""`sparkenv build`: a known-good image from a profile + lock, tagged only after it audited itself."""

from __future__ import annotations

import sys
from typing import Annotated, Optional

import typer

from sparkenv import cli_options as opts


def register(app: typer.Typer) -> None:
    app.command("build")(build)


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
        str, typer.Option("--output-dir", metavar="DIR", help="Where a lock from INPUTs goes.")
    ] = "lockfiles",
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
    from sparkenv.build.run import BuildRequest
    from sparkenv.build.run import build as run_build
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
    # the tag line first, on stdout beside the text report; on stderr when stdout is JSON
    print(outcome.message, file=sys.stderr if reporting.machine_stdout else sys.stdout, flush=True)
    emit(outcome.report, reporting)
    if outcome.pinned:
        print(outcome.pinned, flush=True)  # the last line alone: REF=$(sparkenv build … --push … | tail -1)
    raise typer.Exit(outcome.code)


def _target_gpu(gpu: str | None, prof) -> str:  # type: ignore[no-untyped-def]
    """--gpu, else the profile's `gpu`, else the GB10: what the image's extensions must run on (G7)."""
    from sparkenv.cuda import coverage
    from sparkenv.errors import SparkenvError

    value = (gpu or str(getattr(prof, "gpu", "") or "") or coverage.cap_text(coverage.gb10())).strip()
    if value.lower() == "none":
        return "none"
    cap = coverage.parse_capability(value)
    if cap is None:
        raise SparkenvError(f"--gpu {value!r}: not a GPU capability (like 12.1 or 9.0) or 'none'")
    return coverage.cap_text(cap)


def _driver_check(driver: str | None, prof) -> str | None:  # type: ignore[no-untyped-def]
    """G1 at build time: the profile's CUDA against --driver, or against this machine's driver when it
    has one (building on the Spark); rules/g1.driver_for_image judges it (a WARN: the image may run
    elsewhere)."""
    from sparkenv.cuda import driver as drv
    from sparkenv.errors import SparkenvError
    from sparkenv.report import Status

    where = "--driver"
    if driver is None:
        try:
            with open("/proc/driver/nvidia/version", encoding="utf-8", errors="replace") as fh:
                driver = drv.parse_proc_version(fh.read(4096))
            where = "this machine's driver"
        except OSError:
            return None
        if driver is None:
            return None
    elif drv.parse_proc_version(f"Kernel Module {driver}") != driver.strip():
        raise SparkenvError(f"--driver {driver!r}: not a driver version like 580.95.05")
    cuda = getattr(prof, "cuda", None) or None
    from sparkenv.rules.g1 import driver_for_image

    found = driver_for_image(driver.strip(), cuda, where=f"profile {prof.name}")
    text = f"{found.id} {found.status.value}: {found.summary} ({where})"
    return text + (f"; fix: {found.fix}" if found.fix and found.status is not Status.PASS else "")

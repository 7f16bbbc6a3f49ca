"""`sparkenv audit`: the command line of the audit stage."""

from __future__ import annotations

from typing import Annotated, Optional

import typer

from sparkenv import cli_options as opts


def register(app: typer.Typer) -> None:
    app.command()(audit)


@opts.reporting()
def audit(
    target: Annotated[Optional[str], opts.ENVIRONMENT] = None,  # noqa: UP045 - typer needs Optional on 3.10
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
    gpu: Annotated[
        str,
        typer.Option(
            "--gpu",
            metavar="CAP",
            help="The GPU the environment must run on (G7 kernel coverage): 12.1 (GB10, DGX Spark), 9.0 "
            "(H100/H200), 10.0 (B200) …; `none` skips the kernel check.",
        ),
    ] = "12.1",
    *,
    reporting: opts.ReportOptions,
) -> None:
    """Inspect an installed environment from outside — nothing is imported or run — for G1, G2, G7 and G9.

    G1: every distribution's CUDA major, from its name, version label, Requires-Dist, install paths and
    the DT_NEEDED entries of its shared objects; CPU-only torch; shared objects of the wrong CPU.
    G2: where flash-attn came from and whether it fits; Unsloth next to it without the SDPA override.
    G7: the GPU code (fatbin headers) of every shared object against --gpu: machine code that runs,
    PTX only (JIT at first use), or nothing that runs ('no kernel image is available'); Triton's ptxas.
    G9: container markers, NGC torch replaced by pip, drift against --lock.

    Examples:

      sparkenv audit                      # the current environment

      sparkenv audit .venv --lock lockfiles/pylock.ngc-25-11.toml

      sparkenv audit /usr/bin/python3 --junit audit.xml -q
    """
    from sparkenv.audit.run import audit as run_audit
    from sparkenv.audit.run import say_what_was_read
    from sparkenv.cuda import coverage
    from sparkenv.render.emit import emit

    result = run_audit(target, lock=lock, machine=machine, root=root, gpu=coverage.parse_gpu_option(gpu))
    say_what_was_read(result, reporting)
    raise typer.Exit(emit(result, reporting))

"""`sparkenv audit`: the command line of the audit stage."""

from __future__ import annotations

from typing import Annotated, Any, Optional

import typer

from sparkenv.audit.options import AUDIT
from sparkenv.cli import options as opts


def register(app: typer.Typer) -> None:
    app.command()(audit)


@opts.reporting(options=AUDIT)
def audit(
    target: Annotated[Optional[str], opts.ENVIRONMENT] = None,  # noqa: UP045 - typer needs Optional on 3.10
    *,
    values: dict[str, Any],
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
    from sparkenv.audit import audit_args

    raise typer.Exit(audit_args.run(audit_args.AuditArgs.of(target, values, reporting)))

"""`sparkenv patch sdpa [TARGET] [--install | --uninstall]`: the .pth activation of the SDPA override."""

from __future__ import annotations

from typing import Annotated, Optional

import typer

from sparkenv.cli import options as opts
from sparkenv.core.errors import SparkenvError
from sparkenv.core.report import Report

patch_app = typer.Typer(
    name="patch",
    help="Runtime patches for an environment (today: the G2 SDPA override for Unsloth).",
    no_args_is_help=True,
    context_settings={"help_option_names": ["-h", "--help"]},
    add_completion=False,
    pretty_exceptions_enable=False,
    rich_markup_mode=None,
)


@patch_app.command("sdpa")
@opts.reporting()
def sdpa(
    target: Annotated[Optional[str], opts.ENVIRONMENT] = None,  # noqa: UP045 - typer needs Optional on 3.10
    install: Annotated[bool, typer.Option("--install", help="Install the .pth activation.")] = False,
    uninstall: Annotated[bool, typer.Option("--uninstall", help="Remove it.")] = False,
    *,
    reporting: opts.ReportOptions,
) -> None:
    """Make SDPA Unsloth's attention in TARGET without code changes, or say whether it is.

    --install writes sparkenv-sdpa.pth and _sparkenv_sdpa.py into TARGET's site-packages and checks that
    a fresh interpreter picks the hook up. At run time it sets the flash-attn (and xformers) flags in
    every Unsloth module as it is imported, and transformers' is_flash_attn_*_available helpers; it
    imports nothing until Unsloth is imported. SPARKENV_SDPA=0 switches it off for one run,
    SPARKENV_SDPA=xformers keeps xformers. Without --install or --uninstall: report whether it is
    installed. In code, without the .pth: `from sparkenv.patches import force_sdpa; force_sdpa()`.

    Examples:

      sparkenv patch sdpa --install .venv

      SPARKENV_SDPA=0 python train.py     # one run with Unsloth's own choice

      sparkenv patch sdpa --uninstall .venv
    """
    from sparkenv.environment import target as targets
    from sparkenv.facts.override import OverrideFacts
    from sparkenv.patches import install as inst
    from sparkenv.render.emit import emit
    from sparkenv.rules.g2 import override_outcome

    if install and uninstall:
        raise SparkenvError("--install and --uninstall exclude each other")
    resolved = targets.resolve(target)
    site = resolved.site_dirs[0]
    where = inst.files(site)
    verified: tuple[bool, str] | None = None
    removed: tuple[str, ...] = ()
    if install:  # the action; what it means is judged in rules/g2.py
        inst.install(site)
        if resolved.interpreter is not None:
            verified = inst.verify(resolved.interpreter, site)
    elif uninstall:
        removed = tuple(str(p) for p in inst.uninstall(site))
    facts = OverrideFacts(
        action="install" if install else "uninstall" if uninstall else "status",
        site=str(site),
        target=target or str(site),
        pth=str(where.pth),
        module=str(where.module),
        present=where.present,
        module_present=where.module.is_file(),
        current=where.current,
        interpreter_found=resolved.interpreter is not None,
        verified=verified,
        removed=removed,
        source=str(inst.SOURCE),
    )
    findings = [override_outcome(facts)]
    result = Report("patch", resolved.description, findings, context={"patch": "sdpa"})
    raise typer.Exit(emit(result, reporting))


def register(app: typer.Typer) -> None:
    app.add_typer(patch_app, name="patch")

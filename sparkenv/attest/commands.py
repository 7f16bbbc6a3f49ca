"""`sparkenv attest`: run a workload with the probe for a bounded window and say which kernels it ran; or
judge a record written earlier (`--record`, what `gate --attest` runs at the window's end)."""

from __future__ import annotations

import os
import sys
from collections.abc import Callable
from typing import TYPE_CHECKING, Annotated, Optional

import typer

from sparkenv.cli import options as opts
from sparkenv.core.errors import SparkenvError

if TYPE_CHECKING:
    from sparkenv.facts.attest import AttestFacts
    from sparkenv.render.emit import Shown


def register(app: typer.Typer) -> None:
    app.command(context_settings={"help_option_names": ["-h", "--help"]})(attest)


@opts.reporting()
def attest(
    workload: Annotated[
        Optional[list[str]],  # noqa: UP045
        typer.Argument(metavar="[-- CMD ARGS...]", help="The workload to run and watch.", show_default=False),
    ] = None,
    seconds: Annotated[
        Optional[float],  # noqa: UP045
        typer.Option(
            "--seconds", metavar="N", help="The window: N seconds from torch's import (default 30)."
        ),
    ] = None,
    steps: Annotated[
        Optional[int],  # noqa: UP045
        typer.Option(
            "--steps",
            metavar="N",
            help="End the window at the N-th optimizer step (--seconds, default 600, still ends it).",
        ),
    ] = None,
    attention: Annotated[
        Optional[str],  # noqa: UP045
        typer.Option(
            "--attention",
            metavar="sdpa|flash-attn|any",
            help="The attention the model asked for (G2). Default: sdpa where $SPARKENV_SDPA wants the SDPA "
            "override, else any.",
        ),
    ] = None,
    folder: Annotated[
        Optional[str],  # noqa: UP045
        typer.Option("--dir", metavar="DIR", help="Where the records go (default ./sparkenv-attest)."),
    ] = None,
    record: Annotated[
        Optional[str],  # noqa: UP045
        typer.Option("--record", metavar="FILE|DIR", help="Judge a record (or a folder of them) instead."),
    ] = None,
    html: Annotated[
        Optional[str],  # noqa: UP045
        typer.Option(
            "--html",
            metavar="FILE",
            help="Also write the report to FILE as one self-contained HTML page (inline CSS and SVG, no "
            "script, nothing fetched): the findings, GPU-time share per backend family and per library as "
            "bar charts, the top kernels, the JIT cache, whether a record is partial.",
        ),
    ] = None,
    follow: Annotated[
        Optional[int],  # noqa: UP045
        typer.Option(
            "--follow", hidden=True, help="With --record DIR: wait for this PID's windows (gate --attest)."
        ),
    ] = None,
    jit_cache: Annotated[
        Optional[str],  # noqa: UP045
        typer.Option(
            "--jit-cache", hidden=True, help="The workload's private CUDA JIT cache (gate --attest)."
        ),
    ] = None,
    *,
    reporting: opts.ReportOptions,
) -> None:
    """Which kernels the workload actually ran: the attention backend (G2), kernels JIT-compiled from PTX,
    GPU operators run on the CPU, and GPU time per backend family and library (G7).

    The workload's own Python loads a probe (first on its PYTHONPATH) that, once torch is imported, records
    every GPU kernel and operator with torch's profiler for the window, then stops it and frees its
    buffers: the workload goes on untouched (the report comes when the window ends; sparkenv then waits
    for the workload and exits with its status when it failed). Records are written as they go (a killed
    run leaves a readable partial record); nothing is sent anywhere. A fresh private CUDA JIT cache shows
    whether the driver compiled PTX. Workloads run with python -I or -E do not load the probe.

    Each kernel is traced to the loaded library whose GPU code defines it (its cubins' symbol tables), else
    to a family by its name; a hot op on a fallback family where a faster one exists for this GPU is a
    finding. Whatever the engine (torch or not), sparkenv samples the workload's processes through NVML
    during the window and says whether the GPU was used at all; with no torch, the window ends at its
    --seconds (plus 5 s).

    Examples:

      sparkenv attest --seconds 20 -- python train.py

      sparkenv attest --steps 10 --attention sdpa --json -- python finetune.py

      sparkenv attest --record sparkenv-attest/attest-4242.jsonl

      sparkenv attest --record sparkenv-attest --html attest.html
    """

    from sparkenv.attest import launch, run
    from sparkenv.core import outputs
    from sparkenv.core.bounds import seconds_problem
    from sparkenv.render.emit import emit

    if bool(workload) == bool(record):
        raise SparkenvError(
            "give a workload after -- (sparkenv attest -- CMD) or --record FILE|DIR, not both"
        )
    if html:
        outputs.check([*reporting.files, html])  # a bad path: exit 2 before the workload starts
    if record:
        if follow is None:
            facts = run.gather(record, attention, os.environ, jit_cache)
            raise typer.Exit(emit(run.judge(facts, record), reporting, more=_html(html, facts)))
        code = emit(run.follow(follow, record, jit_cache, attention, seconds or 30.0), reporting)
        sys.stdout.flush()
        run.after_follow(follow, jit_cache)
        raise typer.Exit(code)
    window = seconds if seconds is not None else (600.0 if steps else 30.0)
    problem = seconds_problem(window, zero_ok=False)
    if problem:
        raise SparkenvError(f"--seconds: {problem}")
    if steps is not None and steps < 1:
        raise SparkenvError(f"--steps {steps}: must be a number of optimizer steps, 1 or more")
    run.wanted_attention(attention, os.environ)  # a bad --attention: exit 2 before the workload starts
    facts, report, running = run.workload(
        list(workload or []), folder or launch.DEFAULT_FOLDER, window, steps or 0, attention
    )
    code = emit(report, reporting, more=_html(html, facts))
    status = run.finish(running)
    raise typer.Exit(status if status else code)


def _html(path: str | None, facts: AttestFacts) -> Callable[[Shown], list[tuple[str, str]]] | None:
    """--html FILE: the page of the report as shown (--select, --ignore, waivers applied), written with
    the other report files, all or none."""
    if not path:
        return None

    def page(view: Shown) -> list[tuple[str, str]]:
        from sparkenv.render import attest_html

        return [(path, attest_html.render(view.report, facts))]

    return page

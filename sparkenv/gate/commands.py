"""`sparkenv gate`: the image entrypoint. Checks the live machine, then execs the workload."""

from __future__ import annotations

from typing import Annotated, Any, Optional

import typer

from sparkenv.cli import options as opts
from sparkenv.gate.options import GATE


def register(app: typer.Typer) -> None:
    app.command(context_settings={"help_option_names": ["-h", "--help"]})(gate)


@opts.reporting(gate=True, options=GATE)
def gate(
    workload: Annotated[
        Optional[list[str]],  # noqa: UP045
        typer.Argument(
            metavar="[-- CMD ARGS...]", help="The workload to exec after the checks.", show_default=False
        ),
    ] = None,
    *,
    values: dict[str, Any],
    reporting: opts.ReportOptions,
) -> None:
    """Check all ten failure modes on this machine, then start the workload.

    By default nothing is imported or started: torch's CUDA linkage is proven from its files (its
    version label and libtorch_cuda.so's libraries resolved the way the loader will), the GPU, driver,
    temperature, power and GPU processes come from NVML in-process, memory from /proc/meminfo. All
    probes run at once under one --deadline. --deep adds the isolated torch process (first CUDA
    operation, flash-attn call). The ten checks are pure functions of the facts snapshot, so
    `--dump-facts` / `--facts` replay a machine exactly.

    With a workload after `--`, the G-lines go to stderr and the workload is exec'd: its signals and exit
    status are its own. Off a Spark the gate still runs and says platform: generic-nvidia or no-gpu.

    Examples:

      sparkenv gate                                   # check and report, exit 1 on a FAIL

      sparkenv gate --policy strict -- python train.py --epochs 3

      sparkenv gate --deep --sample 10 --bandwidth --dump-facts facts.json

      sparkenv gate --watch --watch-dir /logs -- python train.py   # G3/G4/G6 over the whole run
    """
    from sparkenv.gate import entry

    entry.finish(entry.run(entry.GateArgs(workload=list(workload or []), reporting=reporting, **values)))

"""`sparkenv host`: the Spark itself, outside any container."""

from __future__ import annotations

from typing import Any

import typer

from sparkenv.cli import options as opts
from sparkenv.host.options import HOST


def register(app: typer.Typer) -> None:
    app.command(context_settings={"help_option_names": ["-h", "--help"]})(host)


@opts.reporting(options=HOST)
def host(*, values: dict[str, Any], reporting: opts.ReportOptions) -> None:
    """Check the Spark itself before any container: run it first on a new Spark, and after an OS update.

    Run it on the machine, as the user who will start containers (not in a container, not with sudo:
    the Docker check is about your own access). It prints, never runs, the command that fixes each
    problem:

    G9 Docker: the socket and your right to it (root, or the docker group in this session), the engine
    answering, the NVIDIA runtime or a CDI spec naming the GPU, free space for images; with --image,
    one container of that image asked for the GPUs (`docker run --gpus all IMAGE nvidia-smi -L`).
    G1 the NVIDIA driver and its kernel module's flavour (open or proprietary: GB10 needs the open one),
    the kernel and DGX OS against dated known issues (data/hosts.toml). G3 earlyoom / systemd-oomd and
    swap. G4 the CPU governor and the fastest core's frequency with a one-second busy loop pinned to
    it. G10 CmaTotal (RDMA between two Sparks).

    Without a GPU or without Docker the lines that need them say SKIP and why (on a Spark, no Docker is a
    FAIL). `--dump-facts` writes what was read, in the gate's snapshot format; `--facts` judges such a
    snapshot here (attach one to a bug report).

    Examples:

      sparkenv host                                            # the first thing to run on a new Spark

      sparkenv host --image nvcr.io/nvidia/pytorch:25.11-py3   # and can a container see the GPU?

      sparkenv host --dump-facts spark.json; sparkenv host --facts spark.json --json
    """
    from sparkenv.host.run import HostArgs, run
    from sparkenv.render.emit import emit

    report, _ = run(HostArgs(**values))
    raise typer.Exit(emit(report, reporting))

"""`sparkenv gate`: the image entrypoint. Checks the live machine, then execs the workload."""

from __future__ import annotations

import os
import sys
from typing import Annotated, Optional

import typer

from sparkenv import cli_options as opts

POLICIES = ("strict", "warn", "off")


def register(app: typer.Typer) -> None:
    app.command(context_settings={"help_option_names": ["-h", "--help"]})(gate)


def gate(
    workload: Annotated[
        Optional[list[str]],  # noqa: UP045
        typer.Argument(
            metavar="[-- CMD ARGS...]", help="The workload to exec after the checks.", show_default=False
        ),
    ] = None,
    policy: Annotated[
        Optional[str],  # noqa: UP045
        typer.Option(
            "--policy",
            metavar="strict|warn|off",
            envvar="SPARKENV_GATE",
            help="strict: a FAIL stops the start (exit 1); warn: report and start anyway (default); "
            "off: start at once, no checks. Also $SPARKENV_GATE.",
        ),
    ] = None,
    need_gb: Annotated[
        float,
        typer.Option(
            "--need-gb", metavar="GIB", help="Memory the run needs: G3 warns when MemAvailable is lower."
        ),
    ] = 0.0,
    sample: Annotated[
        float,
        typer.Option(
            "--sample", metavar="SECONDS", help="G4: sample temperature and power over this window."
        ),
    ] = 0.0,
    bandwidth: Annotated[bool, typer.Option("--bandwidth", help="G5: measure a device memory copy.")] = False,
    import_unsloth: Annotated[
        bool,
        typer.Option(
            "--import-unsloth",
            help="G2: import Unsloth (slow, ~25 s) to confirm its attention dispatch picks SDPA.",
        ),
    ] = False,
    link_test: Annotated[
        bool,
        typer.Option(
            "--link-test",
            help="G10, multi-node launches: time one all-reduce between the nodes (NCCL on GPUs, gloo on "
            "CPUs) after they agree, and warn when it is below the link's expected bandwidth.",
        ),
    ] = False,
    dump_facts: Annotated[
        Optional[str],  # noqa: UP045
        typer.Option(
            "--dump-facts", metavar="FILE", help="Write the facts snapshot (attach it to a bug report)."
        ),
    ] = None,
    facts: Annotated[
        Optional[str],  # noqa: UP045
        typer.Option("--facts", metavar="FILE", help="Replay a snapshot instead of probing this machine."),
    ] = None,
    python: Annotated[
        Optional[str],  # noqa: UP045
        typer.Option(
            "--python", metavar="PATH", help="Interpreter whose torch is checked. Default: this one."
        ),
    ] = None,
    deadline: Annotated[
        float,
        typer.Option(
            "--deadline",
            metavar="SECONDS",
            help="One deadline for all probes: a hung probe never blocks a start.",
        ),
    ] = 25.0,
    json_out: Annotated[bool, opts.JSON] = False,
    report: Annotated[Optional[str], opts.REPORT] = None,  # noqa: UP045
    junit: Annotated[Optional[str], opts.JUNIT] = None,  # noqa: UP045
    strict: Annotated[bool, opts.STRICT] = False,
    quiet: Annotated[bool, opts.QUIET] = False,
) -> None:
    """Check all ten failure modes on this machine, then start the workload.

    Probes (each with a timeout, all under one --deadline) gather a facts snapshot: one subprocess that
    imports torch once and runs a first CUDA operation, nvidia-smi, /proc/meminfo, /proc processes,
    container markers, the environment and the workload's own arguments. The ten checks are pure
    functions of that snapshot, so `--dump-facts` / `--facts` replay a machine exactly.

    With a workload after `--`, the G-lines go to stderr and the workload is exec'd: its signals and exit
    status are its own. Off a Spark the gate still runs and says platform: generic-nvidia or no-gpu.

    Examples:

      sparkenv gate                                   # check and report, exit 1 on a FAIL

      sparkenv gate --policy strict -- python train.py --epochs 3

      sparkenv gate --sample 10 --bandwidth --dump-facts facts.json
    """
    from sparkenv.errors import SparkenvError
    from sparkenv.gate.probes import Options
    from sparkenv.gate.run import gate as run_gate
    from sparkenv.render.emit import emit, write_atomic
    from sparkenv.report import Status

    cmd = list(workload or [])
    chosen = (policy or "warn").strip().lower()
    if chosen not in POLICIES:
        raise SparkenvError(f"--policy/$SPARKENV_GATE: {policy!r} is not one of {', '.join(POLICIES)}")
    if chosen == "off":
        if cmd:
            _exec(cmd)
        return
    options = Options(
        python=python or sys.executable,
        workload=cmd,
        sample_s=max(0.0, sample),
        bandwidth=bandwidth,
        import_unsloth=import_unsloth,
        deadline_s=max(1.0, deadline),
        link_test=link_test,
    )
    result, raw = run_gate(options, facts_file=facts, need_gb=need_gb)
    if dump_facts:
        import json

        write_atomic(dump_facts, json.dumps(raw, indent=1, default=str) + "\n")
    stream = sys.stderr if cmd else sys.stdout
    code = emit(
        result, json_out=json_out, report=report, junit=junit, strict=strict, quiet=quiet, stream=stream
    )
    if not cmd:
        raise typer.Exit(code)
    fails = result.count(Status.FAIL)
    if chosen == "strict" and fails:
        print(
            f"sparkenv gate: start blocked by {fails} FAIL (policy strict); to start anyway set "
            "SPARKENV_GATE=warn or pass --policy warn",
            file=sys.stderr,
        )
        raise typer.Exit(1)
    _exec(cmd)


def _exec(cmd: list[str]) -> None:
    """Replace this process with the workload: its PID, signals and exit status are its own."""
    sys.stdout.flush()
    sys.stderr.flush()
    try:
        os.execvp(cmd[0], cmd)
    except OSError as exc:
        print(f"sparkenv: error: cannot start {cmd[0]}: {exc.strerror}", file=sys.stderr)
        raise typer.Exit(127 if isinstance(exc, FileNotFoundError) else 126) from None

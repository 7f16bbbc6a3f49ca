"""`sparkenv watch`: watch a running process (`--pid`), or read a record after the fact (`--report`)."""

from __future__ import annotations

import os
from typing import Annotated, Any, Optional

import typer

from sparkenv.cli import options as opts
from sparkenv.core.errors import SparkenvError
from sparkenv.gate import options as watching


def register(app: typer.Typer) -> None:
    app.command(context_settings={"help_option_names": ["-h", "--help"]})(watch)


def watch(
    pid: Annotated[
        Optional[int],  # noqa: UP045
        typer.Option("--pid", metavar="PID", help="Watch this running process until it ends."),
    ] = None,
    report: Annotated[
        Optional[str],  # noqa: UP045
        typer.Option("--report", metavar="FILE", help="Read a watch record (.jsonl) and say what it shows."),
    ] = None,
    plot: Annotated[
        Optional[str],  # noqa: UP045
        typer.Option("--plot", metavar="FILE", help="With --report: also write the run's plot (SVG)."),
    ] = None,
    folder: Annotated[Optional[str], opts.typer_option(watching.WATCHER_DIR)] = None,  # noqa: UP045
    interval: Annotated[Optional[float], opts.typer_option(watching.WATCHER_INTERVAL)] = None,  # noqa: UP045
    policy: Annotated[Optional[str], opts.typer_option(watching.WATCHER_POLICY)] = None,  # noqa: UP045
    argv_json: Annotated[
        Optional[str],  # noqa: UP045
        typer.Option("--argv-json", hidden=True, help="The workload's argv (from gate --watch)."),
    ] = None,
) -> None:
    """Judge G3, G4 and G6 over time beside a running workload, with a record that survives a hard
    power-off; or read such a record afterwards.

    `sparkenv gate --watch -- CMD` starts this beside the workload for you. Each condition is one G-line
    on stderr with its time since start, said once; a summary follows when the process ends. The folder
    gets watch-<time>-<pid>.jsonl (the record, fsynced every 10 s), watch-<time>-<pid>.svg (the plot) and
    sparkenv_watch.prom (for node-exporter's textfile collector).

    Examples:

      sparkenv watch --pid 4242 --dir /var/log/sparkenv

      sparkenv watch --report sparkenv-watch/watch-20261202T013000Z-1.jsonl --plot run.svg
    """
    if (pid is None) == (report is None):
        raise SparkenvError(
            "give one of --pid PID (watch a running process) or --report FILE (read a record)"
        )
    if report is not None:
        from sparkenv.watch import plot as plotting
        from sparkenv.watch import record
        from sparkenv.watch import report as reading

        rec = record.read(report)
        if plot:
            from sparkenv.core import outputs

            title = f"sparkenv watch: {' '.join(rec.header.get('workload') or [])[:80]}"
            outputs.write_one(plot, plotting.render(reading.series(rec), rec.events, title))
        findings = reading.judge(rec)
        typer.echo(reading.render(rec, findings), nl=False)
        raise typer.Exit(reading.exit_code(findings))
    if plot:
        raise SparkenvError("--plot goes with --report; a watch writes its plot into --dir")
    o = options(pid, folder, interval, policy, argv_json)  # type: ignore[arg-type]
    from sparkenv.watch import loop

    raise typer.Exit(loop.watch(o))


def options(
    pid: int, folder: str | None, interval: float | None, policy: str | None, argv_json: str | None
) -> Any:
    import json

    from sparkenv.knowledge import watch as limits
    from sparkenv.watch import launch, loop

    chosen = launch.check(policy, interval if interval is not None else limits().sampling.interval_s, "--")
    if pid <= 0 or not os.path.exists(f"/proc/{pid}"):
        raise SparkenvError(f"--pid {pid}: no such process")
    workload: list[str] = []
    if argv_json:
        workload = [str(a) for a in json.loads(argv_json)]
    else:
        try:
            with open(f"/proc/{pid}/cmdline", "rb") as fh:
                workload = [a.decode("utf-8", "replace") for a in fh.read(8192).split(b"\0") if a]
        except OSError:
            pass
    folder = launch.check_folder(folder or launch.DEFAULT_FOLDER)
    return loop.Options(pid, folder, chosen[1], chosen[0], workload)

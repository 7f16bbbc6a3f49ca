"""Start the watcher beside the workload, from the gate, once the workload has started.

The watcher is `python -m sparkenv watch --pid <the workload's PID>`, a child of the gate, which stays as
the workload's supervisor (sparkenv/watch/supervise.py says why): the watcher runs in its own session and
process group, so a Ctrl-C or a signal to the workload's group does not reach it, and it ends when the
workload ends, before the gate returns the workload's status.

Imported only under --watch: the gate's default start stays lean.
"""

from __future__ import annotations

import json
import math
import os
import subprocess
import sys

from sparkenv.core import children
from sparkenv.core.errors import SparkenvError

DEFAULT_FOLDER = "sparkenv-watch"
POLICIES = ("report", "stop")


def check_folder(folder: str) -> str:
    """The watch folder, made and proven writable now, before the workload starts (exit 2 otherwise)."""
    path = os.path.abspath(folder)
    try:
        os.makedirs(path, exist_ok=True)
    except OSError as exc:
        raise SparkenvError(f"--watch-dir {folder}: cannot create it: {exc.strerror}") from None
    if not os.path.isdir(path) or not os.access(path, os.W_OK | os.X_OK):
        raise SparkenvError(f"--watch-dir {folder}: not a writable folder")
    return path


def start(
    folder: str,
    interval_s: float,
    policy: str,
    workload: list[str],
    pid: int,
    environ: dict[str, str] | None = None,
) -> subprocess.Popen[bytes]:
    """The watcher of `pid`, started with `environ` (this process's by default); its G-lines go to this
    process's stderr."""
    argv = [
        sys.executable,
        "-m",
        "sparkenv",
        "watch",
        "--pid",
        str(pid),
        "--dir",
        folder,
        "--interval",
        repr(interval_s),
        "--policy",
        policy,
        "--argv-json",
        json.dumps(workload),
    ]
    # the sparkenv that runs the gate, whatever the workload's folder holds
    here = os.path.dirname(os.path.dirname(os.path.abspath(__file__ + "/..")))
    env = dict(os.environ if environ is None else environ)
    env["PYTHONPATH"] = os.pathsep.join(p for p in (here, env.get("PYTHONPATH")) if p)
    sys.stderr.flush()

    # its own session (sparkenv/core/children.py): a signal to the workload's group does not reach it
    return children.spawn(argv, env, stdout=sys.stderr.fileno(), stderr=sys.stderr.fileno())


def check(policy: str | None, interval: float, prefix: str) -> tuple[str, float]:
    """(policy, interval) validated, or SparkenvError naming the option (exit 2)."""
    chosen = (policy or "report").strip().lower()
    if chosen not in POLICIES:
        raise SparkenvError(f"{prefix}policy: {policy!r} is not one of {', '.join(POLICIES)}")
    if not math.isfinite(interval) or interval < 0.2 or interval > 3600:
        raise SparkenvError(f"{prefix}interval: {interval:g} s is outside 0.2 … 3600")
    return chosen, interval

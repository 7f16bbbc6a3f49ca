"""Run the gate's probes at once under one deadline that holds whatever a probe does.

Each probe runs in a daemon thread: one stuck in open() on a FIFO, in a read of a pipe a grandchild
keeps open, or in a driver call cannot delay the report, and cannot keep the interpreter alive at exit
(concurrent.futures joins its workers at exit; daemon threads are not joined). Every child process a
probe starts is registered here, in its own session, so the deadline and any signal kill its whole
process group.
"""

from __future__ import annotations

import contextlib
import signal
import threading
import time
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from sparkenv.core import children, signals

if TYPE_CHECKING:  # subprocess is imported where a child is started: the default gate starts none
    import subprocess


# (one registry of children for every command: sparkenv/core/children.py)
def bounded_run(argv: list[str], deadline: float, env: dict[str, str] | None = None) -> dict[str, Any]:
    """Run argv until it exits or the monotonic `deadline`; never wait on pipes after that."""
    return Bounded(argv, env).finish(deadline)


class Bounded:
    """A child started now and finished (or killed) by `finish(deadline)`: the gate starts its slowest
    probe, the --deep torch process, before it imports the rest of itself (gate/early.py).

    A child that forks a grandchild keeping stdout open (a --python wrapper script) makes
    communicate() wait forever; here the pipes are read by daemon threads that are simply left behind.
    """

    def __init__(self, argv: list[str], env: dict[str, str] | None = None) -> None:
        self.argv = list(argv)
        self.started = time.monotonic()
        self.proc: subprocess.Popen[bytes] = children.spawn(argv, env)
        self.out: list[bytes] = []
        self.err: list[bytes] = []
        self.readers = [
            threading.Thread(target=_drain, args=(self.proc.stdout, self.out), daemon=True),
            threading.Thread(target=_drain, args=(self.proc.stderr, self.err), daemon=True),
        ]
        for r in self.readers:
            r.start()

    def finish(self, deadline: float) -> dict[str, Any]:
        import subprocess

        proc, readers = self.proc, self.readers
        timed_out = False
        try:
            children.wait(proc, max(0.0, deadline - time.monotonic()))
        except subprocess.TimeoutExpired:
            timed_out = True
            children.kill(proc)
            with contextlib.suppress(subprocess.TimeoutExpired):
                proc.wait(timeout=0.2)
        finally:
            # The probe is done: anything it left in its session (a wrapper's background child) goes too.
            children.stop(proc, reap_s=0.2)  # its group, and orphans it left (a wrapper's setsid child)
        # The pipes close when every holder exits; a holder outside our process group may never exit.
        for r in readers:
            r.join(timeout=max(0.0, min(0.2, deadline + 0.3 - time.monotonic())) if not timed_out else 0.1)
        return {
            "returncode": proc.returncode,
            "timed_out": timed_out,
            "pipes_held": any(r.is_alive() for r in readers),
            "stdout": b"".join(self.out).decode("utf-8", "replace"),
            "stderr": b"".join(self.err).decode("utf-8", "replace"),
            "seconds": round(time.monotonic() - self.started, 3),
        }


def _drain(pipe: Any, into: list[bytes], cap: int = 4 << 20) -> None:
    got = 0
    try:
        while chunk := pipe.read1(65536) if hasattr(pipe, "read1") else pipe.read(65536):
            if got < cap:
                into.append(chunk[: cap - got])
            got += len(chunk)
    except (OSError, ValueError):
        pass


def run_all(
    probes: dict[str, Callable[[], Any]], deadline: float, meanwhile: Callable[[], None] | None = None
) -> tuple[dict[str, Any], dict[str, str]]:
    """Results and errors of every probe; one not back by `deadline` is an error, its thread abandoned.
    `meanwhile` runs in this thread once the probes are started, before waiting for them."""
    results: dict[str, Any] = {}
    errors: dict[str, str] = {}
    done = threading.Condition()
    pending = set(probes)

    def runner(name: str, fn: Callable[[], Any]) -> None:
        try:
            value: Any = fn()
            failure = None
        except Exception as exc:  # a crashing probe is an ERROR line, never a traceback
            value, failure = None, f"{exc.__class__.__name__}: {exc}"
        with done:
            if name in pending:  # late answers after the deadline are dropped: the report is written
                pending.discard(name)
                if failure is None:
                    results[name] = value
                else:
                    errors[name] = failure
            done.notify_all()

    for name, fn in probes.items():
        threading.Thread(target=runner, args=(name, fn), name=f"sparkenv-probe-{name}", daemon=True).start()
    if meanwhile is not None:
        meanwhile()
    with done:
        while pending:
            left = deadline - time.monotonic()
            if left <= 0:
                break
            done.wait(left)
        late = sorted(pending)
        pending.clear()
    return results, {**errors, **{name: "" for name in late}}


class Interrupted(signals.Terminated):
    """A KeyboardInterrupt, not an Exception: a signal that lands while a rule's or a probe's
    `except Exception` runs must still end the gate (128 + signal), never become an ERROR line or,
    landing just outside entry.run's handler, an internal error (exit 70)."""


def on_signals_kill_children() -> Callable[[], None]:
    """While the gate probes, SIGTERM/SIGINT/SIGHUP kill the probes' process groups and end the gate
    (128 + signal, like a shell). Returns a function that restores the previous handlers."""

    def handler(signum: int, _frame: Any) -> None:
        children.kill_all()
        signals.record(signum)
        raise Interrupted(signum)

    return signals.install_handler(handler, (signal.SIGTERM, signal.SIGINT, signal.SIGHUP))

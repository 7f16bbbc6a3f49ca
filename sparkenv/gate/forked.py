"""A probe run in a child forked from the gate, on another core. The gate's work is Python under one
lock (the GIL): its probe threads took turns with the imports and the checks, so NVML (pynvml's import,
the driver calls) and the reading of the workload's interpreter (its packages, torch's files) added their
CPU to the gate's wall time. Forked before the rest of the gate is imported, a child does that work
beside it and sends back the answer (pickled, through a pipe); the parent never imports pynvml.

The child runs sparkenv's code only, never the workload's: fork copies the gate as it stands, and the
child leaves through os._exit whatever happens (no `finally` or atexit of the parent runs in it, no
buffered output is flushed twice). It is forked only while the gate has a single thread (fork with
threads can copy a held lock), is a process group of its own registered with sparkenv/core/children.py, so
the deadline, a signal and the end of the gate kill it, and is reaped before the workload is exec'd."""

from __future__ import annotations

import contextlib
import os
import pickle
import signal
import threading
import time
from collections.abc import Callable
from typing import Any

from sparkenv.core import children


class Failed(Exception):
    """The child ended without an answer (killed, crashed)."""


class Forked:
    """`fn()` computed in a forked child; `result(deadline)` waits for it. OSError when the fork fails,
    RuntimeError when the gate already has threads (then the caller runs `fn` itself).

    With `feed=True` the child computes `fn(receive)`: `receive()` returns the one value the gate sends
    it later with `send` (the live facts, for a group of checks prepared meanwhile: gate/run.py), and
    leaves the child through os._exit when none comes (the gate ended or gave up on it)."""

    def __init__(self, fn: Callable[..., Any], feed: bool = False) -> None:
        if threading.active_count() > 1:
            raise RuntimeError("the gate already runs threads: not forked")
        read_end, write_end = os.pipe()
        feed_read, feed_write = os.pipe() if feed else (-1, -1)
        # registered below, as a child with a Popen's kill/wait (children.adopt), not as a bare pid
        try:
            pid = children.fork(
                lambda: _child(fn, read_end, write_end, feed_read, feed_write), register=False, own_group=True
            )
        except OSError:
            for fd in (read_end, write_end, feed_read, feed_write):
                if fd >= 0:
                    os.close(fd)
            raise
        os.close(write_end)
        if feed:
            os.close(feed_read)
        self.pid = pid
        self.returncode: int | None = None
        self._fd: int | None = read_end
        self._feed: int | None = feed_write if feed else None
        _held.update(fd for fd in (read_end, self._feed) if fd is not None)
        self._lock = threading.Lock()
        self._answer: Any = None
        self._got = False
        children.adopt(self)

    def send(self, payload: bytes, deadline: float) -> bool:
        """Hand the child of `feed=True` its value, `payload` as `packed` gives it, by the monotonic
        `deadline`; False when it cannot take it (it died, or does not read in time): then it is
        stopped."""
        import select

        fd, self._feed = self._feed, None
        if fd is None:
            return False
        view = memoryview(payload)
        try:
            os.set_blocking(fd, False)  # a child that stopped reading never blocks the gate
            while view:
                left = deadline - time.monotonic()
                if left <= 0 or not select.select([], [fd], [], left)[1]:
                    break
                view = view[os.write(fd, view) :]
        except OSError:  # EPIPE: the child is gone
            pass
        finally:
            _close(fd)
        if view:
            self.stop()
            return False
        return True

    def result(self, deadline: float) -> Any:
        """The child's answer (fn's value; its exception raised again, under its class's name), or
        None when it is not back by the monotonic `deadline` (then it is killed)."""
        with self._lock:  # one reader; the others wait for its answer
            if not self._got:
                self._answer = self._collect(deadline)
                self._got = True
        return None if self._answer is None else unwrap(self._answer)

    def _collect(self, deadline: float) -> tuple[Any, ...] | None:
        import select

        fd, chunks = self._fd, []
        assert fd is not None
        try:
            while True:
                left = deadline - time.monotonic()
                if left <= 0:
                    self.stop()
                    return None
                if not select.select([fd], [], [], left)[0]:
                    continue
                chunk = os.read(fd, 1 << 16)
                if not chunk:
                    break
                chunks.append(chunk)
        finally:
            _close(fd)
            self._fd = None
        # It has answered and is exiting (closing NVML, say): reaped now if it is gone, else by
        # reap_all before the workload starts, never left to it.
        children.forget(self)  # type: ignore[arg-type]  # nothing left to kill: the end of the
        # gate's probing (children.kill_all) does not wait for its exit
        if not self._reaped(0.0):
            _exiting.append(self)
        if not chunks:
            self.stop()  # reaped, to say how it ended
            raise Failed(f"the probe's process ended without an answer ({self._how_it_ended()})")
        answer: tuple[Any, ...] = pickle.loads(b"".join(chunks))
        return answer

    def _how_it_ended(self) -> str:
        code = self.returncode
        if code is not None and code < 0:
            with contextlib.suppress(ValueError):
                return f"killed by {signal.Signals(-code).name}"
        return f"exit status {code}"

    # --- what children.kill_all needs of a child (the subset of subprocess.Popen it calls)
    def kill(self) -> None:
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.kill(self.pid, signal.SIGKILL)

    def wait(self, timeout: float | None = None) -> int | None:
        if not self._reaped(timeout):
            import subprocess

            raise subprocess.TimeoutExpired(f"forked probe {self.pid}", timeout or 0.0)
        return self.returncode

    def _reaped(self, timeout: float | None) -> bool:
        end = None if timeout is None else time.monotonic() + timeout
        while self.returncode is None:
            try:
                pid, status = os.waitpid(self.pid, os.WNOHANG)
            except ChildProcessError:  # reaped elsewhere
                self.returncode = -signal.SIGKILL
                break
            if pid:
                self.returncode = os.waitstatus_to_exitcode(status)
                break
            if end is not None and time.monotonic() >= end:
                return False
            time.sleep(0.001)
        return True

    def stop(self) -> None:
        """Reap the child (killed first unless it exits within 50 ms); a child stuck in the kernel (a
        wedged driver call) for more than 0.5 s after SIGKILL is left unreaped."""
        if self._feed is not None:  # never fed: it waits for nothing more
            _close(self._feed)
            self._feed = None
        if not self._reaped(0.05):
            children.kill(self)  # type: ignore[arg-type]  # its group, as every child's
            self._reaped(0.5)
        children.forget(self)  # type: ignore[arg-type]


def packed(value: Any) -> bytes:
    """`value` as Forked.send sends it (pickled once for every child it goes to), length first."""
    payload = pickle.dumps(value, protocol=pickle.HIGHEST_PROTOCOL)
    return len(payload).to_bytes(8, "little") + payload


_exiting: list[Forked] = []  # answered, not yet reaped
# The gate's ends of its children's pipes: a child forked later closes them all at once, so that a
# child's pipe ends at the gate alone (its EOF says the gate has gone) and no sibling holds it open.
_held: set[int] = set()


def _close(fd: int) -> None:
    _held.discard(fd)
    with contextlib.suppress(OSError):
        os.close(fd)


def reap_all() -> None:
    """Before the gate execs the workload: every forked probe reaped (killed first if it still runs),
    so the workload inherits no child of the gate's."""
    while _exiting:
        _exiting.pop().stop()


def _child(fn: Callable[..., Any], read_end: int, write_end: int, feed: int = -1, feeder: int = -1) -> None:
    """In the child (default signal dispositions and a process group of its own: children.fork): fn's
    value or its error, pickled, to the pipe (`feed` >= 0: fn(receive), receive reading that pipe,
    whose other end, `feeder`, only the gate holds)."""
    for fd in (read_end, feeder, *_held):
        if fd < 0:
            continue
        with contextlib.suppress(OSError):
            os.close(fd)
    _held.clear()
    answer = caught(fn if feed < 0 else lambda: fn(_Feed(feed)))
    try:
        payload = pickle.dumps(answer)
    except Exception as exc:  # a value pickle cannot carry: an error of the probe
        payload = pickle.dumps(("error", exc.__class__.__name__, str(exc)))
    view = memoryview(payload)
    while view:
        view = view[os.write(write_end, view) :]
    os.close(write_end)  # the answer is complete: the parent reads on while this process exits


class _Feed:
    """What a fed child's fn is given: called, the value the gate sends (_receive); `waiting()`: True
    while nothing of it has come, so the child can use the time (gate/run.py loads data files)."""

    def __init__(self, fd: int) -> None:
        self._fd = fd

    def __call__(self) -> Any:
        return _receive(self._fd)

    def waiting(self) -> bool:
        import select

        try:
            return not select.select([self._fd], [], [], 0)[0]
        except (OSError, ValueError):  # received already: its end is closed
            return False


def _receive(fd: int) -> Any:
    """In a fed child: the value the gate sends (gate/forked.py's send); when the pipe ends before it is
    whole (the gate ended or gave up), the child leaves at once, answering nothing."""

    def exactly(n: int) -> bytes:
        chunks, got = [], 0
        while got < n:
            chunk = os.read(fd, min(n - got, 1 << 20))
            if not chunk:
                os._exit(0)
            chunks.append(chunk)
            got += len(chunk)
        return b"".join(chunks)

    size = int.from_bytes(exactly(8), "little")
    value = pickle.loads(exactly(size))
    os.close(fd)
    return value


def caught(fn: Callable[[], Any]) -> tuple[Any, ...]:
    """fn's outcome as data that crosses a pipe: ("ok", value) or ("error", class name, message)."""
    try:
        return ("ok", fn())
    except Exception as exc:  # the probe's own error, reported as if it ran in the gate
        return ("error", exc.__class__.__name__, str(exc))


def unwrap(outcome: tuple[Any, ...]) -> Any:
    """The value of caught()'s outcome, or its error raised again: an exception of the same class name
    and message, so the probe's ERROR line reads as when the probe ran in the gate itself."""
    kind, *rest = outcome
    if kind == "ok":
        return rest[0]
    name, message = rest
    raise type(name, (Exception,), {})(message)

"""Forked workers: the gate's slow probes and check workers, the audit's readers. One framing, one way to
start, time out and reap them.

Why forked: the work is Python under one lock (the GIL); in a child it runs on another core beside the
parent (the gate's NVML and interpreter reading, the audit's ELF and fatbin reading). A worker runs
sparkenv's code only: fork copies the parent as it stands, and the worker leaves through os._exit
whatever happens (children.fork: no `finally`, atexit or buffered output of the parent runs twice).

- Framing: every message, either way, is `packed(value)`: an 8-byte length, then the value pickled. The
  audit's shared task queue carries the same frames, each padded to one SLOT (written whole, as writes up
  to PIPE_BUF are, and read whole), so any idle worker takes the next one.
- Start: only while the parent has a single thread (fork with threads can copy a held lock); each worker
  leads a process group of its own and is registered with core/children.py as a Popen-like child, so a
  signal, a deadline and the end of the command kill it (children.kill_all).
- Time: the parent waits for an answer until a monotonic deadline, then kills the worker; `alarm_s`
  kills a worker by SIGALRM whatever it does, even with a parent that no longer waits.
- End: `stop` reaps a worker (killed unless it exits within `grace`); a worker that has answered is
  reaped at the latest by `reap_all`, before the gate execs its workload."""

from __future__ import annotations

import contextlib
import os
import pickle
import signal
import sys
import threading
import time
from collections.abc import Callable
from typing import Any

from sparkenv.core import children

_LEN = 8
SLOT = 512  # one task in a shared queue: a frame longer than this is the caller's to do itself
_PIPE_SIZE = 1 << 20  # a venv's tasks and answers fit, so neither side waits for the other
_F_SETPIPE_SZ = 1031


class Failed(Exception):
    """The worker ended without an answer (killed, crashed)."""


def packed(value: Any) -> bytes:
    """`value` as one frame (pickled once however many workers it goes to)."""
    payload = pickle.dumps(value, protocol=pickle.HIGHEST_PROTOCOL)
    return len(payload).to_bytes(_LEN, "little") + payload


def _unframe(buf: bytearray) -> list[Any]:
    """The whole frames at the start of `buf`, removed from it; what is left is a frame's beginning."""
    found, at = [], 0
    while len(buf) - at >= _LEN:
        size = int.from_bytes(buf[at : at + _LEN], "little")
        if len(buf) - at - _LEN < size:
            break
        found.append(pickle.loads(buf[at + _LEN : at + _LEN + size]))
        at += _LEN + size
    del buf[:at]
    return found


def _write_all(fd: int, data: bytes) -> None:
    view = memoryview(data)
    while view:  # a broken pipe (the parent is gone) raises, and ends the worker
        view = view[os.write(fd, view) :]


def _read_exactly(fd: int, n: int) -> bytes:
    """In a worker: `n` bytes of its pipe; when the pipe ends first (the parent ended or gave up on
    it), the worker leaves at once, answering nothing."""
    chunks, got = [], 0
    while got < n:
        chunk = os.read(fd, min(n - got, 1 << 20))
        if not chunk:
            os._exit(0)
        chunks.append(chunk)
        got += len(chunk)
    return b"".join(chunks)


def caught(fn: Callable[[], Any]) -> tuple[Any, ...]:
    """fn's outcome as data that crosses a pipe: ("ok", value) or ("error", class name, message)."""
    try:
        return ("ok", fn())
    except Exception as exc:  # the probe's own error, reported as if it ran in the parent
        return ("error", exc.__class__.__name__, str(exc))


def unwrap(outcome: tuple[Any, ...]) -> Any:
    """The value of caught()'s outcome, or its error raised again: an exception of the same class name
    and message, so the probe's ERROR line reads as when the probe ran in the gate itself."""
    kind, *rest = outcome
    if kind == "ok":
        return rest[0]
    name, message = rest
    raise type(name, (Exception,), {})(message)


_exiting: list[Worker] = []  # answered, not yet reaped
# The parent's ends of its workers' pipes: a worker forked later closes them all at once, so that a
# worker's pipe ends at the parent alone (its EOF says the parent has gone) and no sibling holds it open.
_held: set[int] = set()


def _close(fd: int) -> None:
    _held.discard(fd)
    with contextlib.suppress(OSError):
        os.close(fd)


def _grow(fd: int) -> None:
    """A larger pipe where Linux allows it; the default one works too, with more waiting."""
    with contextlib.suppress(OSError, ImportError):
        import fcntl

        fcntl.fcntl(fd, _F_SETPIPE_SZ, _PIPE_SIZE)


def reap_all() -> None:
    """Every worker that answered reaped (killed first if it still runs): before the gate execs the
    workload, so that it inherits no child of the gate's."""
    while _exiting:
        _exiting.pop().stop()


class Worker:
    """`body(send)` in a forked worker: `send(frame)` hands the parent one frame (`packed`'s).
    `feed=True`: body is called as `body(send, receive)`, `receive()` returning the one frame the parent
    sends later (`send` here), and leaving the worker when none comes. OSError when the fork fails,
    RuntimeError when the parent already has threads (then the caller does the work itself)."""

    def __init__(
        self, body: Callable[..., None], feed: bool = False, alarm_s: float | None = None, grow: bool = False
    ) -> None:
        if threading.active_count() > 1:
            raise RuntimeError("threads are running: not forked")
        read_end, write_end = os.pipe2(os.O_CLOEXEC)
        feed_read, feed_write = os.pipe2(os.O_CLOEXEC) if feed else (-1, -1)
        if grow:
            _grow(write_end)
        self.returncode: int | None = None
        try:
            children.fork(
                lambda: _run(body, read_end, write_end, feed_read, feed_write, alarm_s),
                register=self._adopted,
            )
        except OSError:
            for fd in (read_end, write_end, feed_read, feed_write):
                if fd >= 0:
                    os.close(fd)
            raise
        os.close(write_end)
        if feed:
            os.close(feed_read)
        self.fd: int | None = read_end
        self._feed: int | None = feed_write if feed else None
        _held.update(fd for fd in (read_end, self._feed) if fd is not None)
        self._buf = bytearray()
        self._lock = threading.Lock()
        self._answer: Any = None
        self._got = False

    def _adopted(self, pid: int) -> None:
        """Registered as a child with a Popen's kill/wait (children.adopt), before a signal can come."""
        self.pid = pid
        children.adopt(self)

    # --- the parent's side
    def send(self, frame: bytes, deadline: float) -> bool:
        """Hand a `feed=True` worker its frame (`packed`'s) by the monotonic `deadline`; False when it
        cannot take it (it died, or does not read in time): then it is stopped."""
        import select

        fd, self._feed = self._feed, None
        if fd is None:
            return False
        view = memoryview(frame)
        try:
            os.set_blocking(fd, False)  # a worker that stopped reading never blocks the parent
            while view:
                left = deadline - time.monotonic()
                if left <= 0 or not select.select([], [fd], [], left)[1]:
                    break
                view = view[os.write(fd, view) :]
        except OSError:  # EPIPE: the worker is gone
            pass
        finally:
            _close(fd)
        if view:
            self.stop()
            return False
        return True

    def take(self) -> list[Any] | None:
        """The whole frames one read of the pipe completes (call when it is readable); None at its end
        (the worker is done or dead), the pipe then closed."""
        assert self.fd is not None
        chunk = os.read(self.fd, 1 << 16)
        if not chunk:
            _close(self.fd)
            self.fd = None
            return None
        self._buf += chunk
        return _unframe(self._buf)

    def result(self, deadline: float) -> Any:
        """The worker's one answer (a `caught` outcome, unwrapped: its value, or its error raised again),
        or None when it is not back by the monotonic `deadline` (then it is killed). Failed when it ended
        without one. Several threads may ask: one reads, the others wait for its answer."""
        with self._lock:
            if not self._got:
                self._answer = self._collect(deadline)
                self._got = True
        return None if self._answer is None else unwrap(self._answer)

    def _collect(self, deadline: float) -> tuple[Any, ...] | None:
        import select

        found: list[Any] | None = []
        while found == [] and self.fd is not None:
            left = deadline - time.monotonic()
            if left <= 0:
                self.stop()
                return None
            if select.select([self.fd], [], [], left)[0]:
                found = self.take()
        if self.fd is not None:
            _close(self.fd)
            self.fd = None
        # It has answered and is exiting (closing NVML, say): reaped now if it is gone, else by reap_all
        # before the workload starts, never left to it. Nothing is left to kill: the end of the gate's
        # probing (children.kill_all) does not wait for its exit.
        children.forget(self)  # type: ignore[arg-type]
        if not self._reaped(0.0):
            _exiting.append(self)
        if not found:
            self.stop()  # reaped, to say how it ended
            raise Failed(f"the probe's process ended without an answer ({self._how_it_ended()})")
        answer: tuple[Any, ...] = found[0]
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

            raise subprocess.TimeoutExpired(f"forked worker {self.pid}", timeout or 0.0)
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
            time.sleep(0.0005)
        return True

    def stop(self, grace: float = 0.05) -> None:
        """Reap the worker, killed first unless it exits within `grace` seconds; its pipes closed. One
        stuck in the kernel (a wedged driver call, a hung file system) for more than 0.5 s after SIGKILL
        is left unreaped."""
        for fd in (self._feed, self.fd):
            if fd is not None:
                _close(fd)
        self._feed = self.fd = None
        if not self._reaped(grace):
            children.kill(self)  # type: ignore[arg-type]  # its group, as every child's
            self._reaped(0.5)
        children.forget(self)  # type: ignore[arg-type]


def _run(
    body: Callable[..., None], read_end: int, write_end: int, feed: int, feeder: int, alarm_s: float | None
) -> None:
    """In the worker (default signal dispositions, a process group of its own: children.fork)."""
    for fd in (read_end, feeder, *_held):
        if fd >= 0:
            with contextlib.suppress(OSError):
                os.close(fd)
    _held.clear()
    handler = sys.modules.get("faulthandler")
    if handler is not None:  # a worker killed by a signal (SIGBUS: a file cut under its mmap) is
        handler.disable()  # expected: the parent says how it ended, no "Fatal Python error" here
    if alarm_s is not None:
        signal.alarm(max(1, int(alarm_s)))

    def send(frame: bytes) -> None:
        _write_all(write_end, frame)

    if feed < 0:
        body(send)
    else:
        body(send, _Feed(feed))
    os.close(write_end)  # the answer is complete: the parent reads on while this process exits


class _Feed:
    """What a fed worker's body is given: called, the frame the parent sends; `waiting()`: True while
    nothing of it has come, so the worker can use the time (gate/run.py loads data files)."""

    def __init__(self, fd: int) -> None:
        self._fd = fd

    def __call__(self) -> Any:
        size = int.from_bytes(_read_exactly(self._fd, _LEN), "little")
        value = pickle.loads(_read_exactly(self._fd, size))
        os.close(self._fd)
        return value

    def waiting(self) -> bool:
        import select

        try:
            return not select.select([self._fd], [], [], 0)[0]
        except (OSError, ValueError):  # received already: its end is closed
            return False


def once(fn: Callable[..., Any], feed: bool = False, alarm_s: float | None = None) -> Worker:
    """A worker whose one answer is `fn()`'s outcome (`fn(receive)`'s with `feed=True`), taken by
    `result(deadline)`: a value pickle cannot carry is an error of the worker's."""

    def body(send: Callable[[bytes], None], *receive: Any) -> None:
        answer = caught(lambda: fn(*receive))
        try:
            frame = packed(answer)
        except Exception as exc:  # a value pickle cannot carry: an error of the worker's
            frame = packed(("error", exc.__class__.__name__, str(exc)))
        send(frame)

    return Worker(body, feed=feed, alarm_s=alarm_s)


class Pool:
    """Tasks (strings) done by `do(task)` in forked workers that take them from one shared queue;
    `answer(task)` waits for a task's answer. The pool starts with the first task; where it cannot (no
    workers wanted, threads running, a failed fork) `failed` is set and every task is the caller's.
    Workers are killed by SIGALRM after `timeout_s`, and the parent stops waiting for them by then."""

    def __init__(self, do: Callable[[str], Any], workers: int, timeout_s: float) -> None:
        self._do, self._wanted, self._timeout_s = do, workers, timeout_s
        self._tasks_r = self._tasks_w = -1
        self._backlog: list[bytes] = []  # frames the full queue did not take yet
        self._closing = False
        self._workers: list[Worker] = []
        self._reading: dict[int, Worker] = {}  # answer pipe -> its worker, until the pipe ends
        self._answers: dict[str, Any] = {}
        self._queued: set[str] = set()
        self._deadline = 0.0
        self.failed = False

    @property
    def workers(self) -> int:
        return len(self._workers)

    def submit(self, task: str) -> None:
        """Queue `task`; one that does not fit a SLOT, or comes with no pool, is left to the caller."""
        if self.failed or (self._tasks_w == -1 and not self._start()):
            return
        frame = packed(task)
        if len(frame) > SLOT or task in self._queued or self._tasks_w < 0:
            return
        self._queued.add(task)
        self._backlog.append(frame.ljust(SLOT, b"\0"))
        self._flush()

    def close_queue(self) -> None:
        """No more tasks: workers leave once the queue is empty."""
        self._closing = True
        self._flush()

    def answer(self, task: str) -> Any:
        """What `do(task)` returned in a worker, waiting for it while any worker may still send it; None
        when no worker answered (then the caller does the task itself)."""
        if task not in self._queued:
            return None
        while task not in self._answers and self._reading:
            self._pump()
        return self._answers.get(task)

    def close(self) -> None:
        """Kill and reap every worker (finished or not) and close the pipes: on the way out, always."""
        self._stop_all()
        _close(self._tasks_r)
        self._tasks_r = -2

    def _start(self) -> bool:
        if self._wanted <= 0 or threading.active_count() > 1:
            self.failed = True
            return False
        try:
            self._tasks_r, self._tasks_w = os.pipe2(os.O_CLOEXEC)
            _held.add(self._tasks_w)  # the queue ends when the parent closes its end: no worker holds it
            _grow(self._tasks_w)
            os.set_blocking(self._tasks_w, False)
            tasks, do = self._tasks_r, self._do
            for _ in range(self._wanted):
                w = Worker(lambda send: _serve(tasks, send, do), alarm_s=self._timeout_s, grow=True)
                self._workers.append(w)
                assert w.fd is not None
                self._reading[w.fd] = w
        except (OSError, RuntimeError):
            self.close()
            self.failed = True
            return False
        self._deadline = time.monotonic() + self._timeout_s + 1
        return True

    def _flush(self) -> None:
        """Write what the queue takes now (one SLOT per write: whole or not at all)."""
        while self._backlog and self._tasks_w >= 0:
            try:
                os.write(self._tasks_w, self._backlog[0])
            except BlockingIOError:
                return
            except OSError:  # every worker is gone: what is left is the caller's
                self._backlog = []
                break
            del self._backlog[0]
        if self._closing and not self._backlog and self._tasks_w >= 0:
            _close(self._tasks_w)
            self._tasks_w = -2

    def _pump(self) -> None:
        """Take in what the workers sent and feed them the backlog; past the deadline, stop waiting."""
        import select

        left = self._deadline - time.monotonic()
        if left <= 0:
            self._stop_all()
            return
        poll = select.poll()
        for fd in self._reading:
            poll.register(fd, select.POLLIN)
        if self._backlog and self._tasks_w >= 0:
            poll.register(self._tasks_w, select.POLLOUT)
        for fd, _ in poll.poll(left * 1000):
            if fd == self._tasks_w:
                self._flush()
                continue
            try:
                frames = self._reading[fd].take()
            except (pickle.UnpicklingError, ValueError, EOFError, TypeError):
                frames = None  # not what a worker writes: what it did not answer is the caller's
            if frames is None:  # the worker is done or dead: what it did not send is the caller's
                self._reading.pop(fd).stop(grace=0.0)
                continue
            for task, value in frames:
                self._answers[task] = value

    def _stop_all(self) -> None:
        for w in self._workers:
            w.stop(grace=0.0)
        self._workers, self._reading, self._backlog = [], {}, []
        if self._tasks_w >= 0:
            _close(self._tasks_w)
        self._tasks_w = -2


def _serve(tasks: int, send: Callable[[bytes], None], do: Callable[[str], Any]) -> None:
    """A pool worker's loop: one task per SLOT until the queue closes; each answer sent whole."""
    while True:
        slot = os.read(tasks, SLOT)
        if len(slot) < SLOT:
            return  # the queue closed (a short read never happens with whole-slot writes)
        size = int.from_bytes(slot[:_LEN], "little")
        task = pickle.loads(slot[_LEN : _LEN + size])
        try:
            frame = packed((task, do(task)))
        except Exception:  # a reader bug, an answer pickle cannot carry: the parent does the task
            continue
        send(frame)

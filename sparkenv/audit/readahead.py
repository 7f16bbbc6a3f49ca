"""Reading metadata and shared objects in forked worker processes: a first audit's reading, spread.

A first audit of a large CUDA venv spends most of its time in readers that need nothing but a path: the
metadata reader, the ELF reader and the fatbin header reader (benchmarks/audit_phases.py). The audit's
process hands every `.dist-info` folder to a pool of forked workers, then each shared object as soon as a
distribution's RECORD names it, checks requirements meanwhile, and takes the workers' answers in its usual
order (audit/scan.py). Nothing is judged in a worker: it returns what the readers returned, as plain data
(the memo's shapes), with the stat key it took before reading, as the audit's process takes one before its
own reads. A task without an answer (a worker killed, timed out, crashed, a path too long for a task) is
read by the audit's own process, as without workers: the findings are those of a serial read.

Tasks go through one pipe as fixed-size records (each written whole, as writes up to PIPE_BUF are, and
read whole), so any idle worker takes the next path; answers come back on one pipe per worker. Every
worker is registered with sparkenv/core/children.py (a signal to the audit kills it through `close` or
`kill_all`), dies with SIGALRM after `timeout_s` whatever it is doing, and exits when the task pipe
closes or the audit's process is gone (its answer pipe then breaks).

`SPARKENV_AUDIT_WORKERS` sets the number of workers (0: read in the audit's process), for benchmarks
and tests; by default one fewer than the CPUs this process may run on, at most 8, none on one CPU.
"""

from __future__ import annotations

import contextlib
import marshal
import os
import select
import signal
import struct
import sys
import threading
import time
from collections.abc import Callable
from typing import Any

from sparkenv.core import children

MAX_WORKERS = 8
TIMEOUT_S = 120.0  # a worker past it is killed and its paths read by the audit's process
_RECORD = 512  # one task: a path, NUL-padded; a longer path is read by the audit's process
_PIPE_SIZE = 1 << 20  # a venv's tasks and answers fit, so neither side waits for the other
_F_SETPIPE_SZ = 1031
_LEN = struct.Struct("<I")


def default_workers() -> int:
    """SPARKENV_AUDIT_WORKERS when set (a count), else the CPUs this process may use less one, capped."""
    given = os.environ.get("SPARKENV_AUDIT_WORKERS", "").strip()
    if given.isdigit():
        return min(int(given), 64)
    return max(0, min(children.usable_cpus() - 1, MAX_WORKERS))


class Readahead:
    """Paths read by `read(path)` in forked workers; `answer(path)` waits for a path's answer."""

    def __init__(self, read: Callable[[str], Any], workers: int, timeout_s: float | None = None) -> None:
        self._read, self._wanted = read, workers
        self._timeout_s = TIMEOUT_S if timeout_s is None else timeout_s
        self._tasks_r = self._tasks_w = -1
        self._backlog: list[bytes] = []  # records the full task pipe did not take yet
        self._closing = False
        self._pids: list[int] = []
        self._pipes: dict[int, bytearray] = {}  # answer pipe -> bytes not yet a whole message
        self._answers: dict[str, Any] = {}
        self._queued: set[str] = set()
        self._deadline = 0.0
        self.failed = False  # the pool could not start: everything is read in the audit's process

    @property
    def workers(self) -> int:
        return len(self._pids)

    def submit(self, path: str) -> None:
        """Queue `path` (the pool starts with the first); one no worker takes is read by the caller."""
        if self.failed or (self._tasks_w == -1 and not self._start()):
            return
        data = os.fsencode(path)
        if len(data) >= _RECORD or data.endswith(b"\0") or path in self._queued or self._tasks_w < 0:
            return
        self._queued.add(path)
        self._backlog.append(data.ljust(_RECORD, b"\0"))
        self._flush()

    def close_queue(self) -> None:
        """No more paths: workers leave once the queue is empty."""
        self._closing = True
        self._flush()

    def answer(self, path: str) -> Any:
        """What `read(path)` returned in a worker, waiting for it while any worker may still send it;
        None when no worker answered (then the caller reads the path itself)."""
        if path not in self._queued:
            return None
        while path not in self._answers and self._pipes:
            self._pump()
        return self._answers.get(path)

    def close(self) -> None:
        """Kill and reap every worker (finished or not) and close the pipes: on the way out, always."""
        for pid in self._pids:
            children.reap(pid)
        self._pids = []
        for fd in [*self._pipes, self._tasks_r, self._tasks_w]:
            if fd >= 0:
                with contextlib.suppress(OSError):
                    os.close(fd)
        self._pipes = {}
        self._backlog = []
        self._tasks_r = self._tasks_w = -2

    def _start(self) -> bool:
        # fork() with other threads running can copy a lock held mid-operation into the worker
        if self._wanted <= 0 or threading.active_count() > 1:
            self.failed = True
            return False
        try:
            self._tasks_r, self._tasks_w = os.pipe2(os.O_CLOEXEC)
            _grow(self._tasks_w)
            os.set_blocking(self._tasks_w, False)
            for _ in range(self._wanted):
                self._fork_one()
        except OSError:
            self.close()
            self.failed = True
            return False
        self._deadline = time.monotonic() + self._timeout_s + 1
        return True

    def _flush(self) -> None:
        """Write what the task pipe takes now (one record per write: whole or not at all)."""
        while self._backlog and self._tasks_w >= 0:
            try:
                os.write(self._tasks_w, self._backlog[0])
            except BlockingIOError:
                return
            except OSError:  # every worker is gone: what is left is read by the caller
                self._backlog = []
                break
            del self._backlog[0]
        if self._closing and not self._backlog and self._tasks_w >= 0:
            os.close(self._tasks_w)
            self._tasks_w = -2

    def _fork_one(self) -> None:
        answers_r, answers_w = os.pipe2(os.O_CLOEXEC)
        _grow(answers_w)
        tasks_r, tasks_w, read, timeout = self._tasks_r, self._tasks_w, self._read, self._timeout_s
        others = list(self._pipes)

        def work() -> None:
            handler = sys.modules.get("faulthandler")
            if handler is not None:  # a worker killed by SIGBUS (a file cut under its mmap) is expected:
                handler.disable()  # the audit reads that file itself, no "Fatal Python error" to show
            os.close(tasks_w)  # the queue ends when the audit's process closes its end
            os.close(answers_r)
            for fd in others:
                os.close(fd)
            signal.alarm(max(1, int(timeout)))
            _serve(tasks_r, answers_w, read)

        try:
            pid = children.fork(work)
        finally:
            os.close(answers_w)
        self._pids.append(pid)
        self._pipes[answers_r] = bytearray()

    def _pump(self) -> None:
        """Take in what the workers sent and feed them the backlog; past the deadline, stop waiting."""
        left = self._deadline - time.monotonic()
        if left <= 0:
            self._give_up()
            return
        poll = select.poll()
        for fd in self._pipes:
            poll.register(fd, select.POLLIN)
        if self._backlog and self._tasks_w >= 0:
            poll.register(self._tasks_w, select.POLLOUT)
        for fd, _ in poll.poll(left * 1000):
            if fd == self._tasks_w:
                self._flush()
            else:
                self._take(fd)

    def _take(self, fd: int) -> None:
        chunk = os.read(fd, 1 << 16)
        if not chunk:
            os.close(fd)
            del self._pipes[fd]  # the worker is done or dead: what it did not send is read here
            return
        buf = self._pipes[fd]
        buf += chunk
        while len(buf) >= 4:
            size = _LEN.unpack_from(buf)[0]
            if len(buf) < 4 + size:
                break
            try:
                path, answer = marshal.loads(bytes(buf[4 : 4 + size]))
                self._answers[path] = answer
            except (ValueError, EOFError, TypeError):
                pass  # not what a worker writes: its path is read here
            del buf[: 4 + size]

    def _give_up(self) -> None:
        for pid in self._pids:
            children.reap(pid)
        self._pids = []
        for fd in [*self._pipes, self._tasks_w]:
            if fd >= 0:
                with contextlib.suppress(OSError):
                    os.close(fd)
        self._pipes = {}
        self._backlog = []
        self._tasks_w = -2


def _grow(fd: int) -> None:
    """A larger pipe where Linux allows it; the default one works too, with more waiting."""
    with contextlib.suppress(OSError, ImportError):
        import fcntl

        fcntl.fcntl(fd, _F_SETPIPE_SZ, _PIPE_SIZE)


def _serve(tasks: int, answers: int, read: Callable[[str], Any]) -> None:
    """A worker's loop: one path per record until the queue closes; each answer sent whole."""
    while True:
        data = os.read(tasks, _RECORD)
        if len(data) < _RECORD:
            return  # the queue closed (a short read never happens with whole-record writes)
        path = os.fsdecode(data.rstrip(b"\0"))
        try:
            message = marshal.dumps((path, read(path)))
        except Exception:  # a reader bug: no answer, so the audit's process reads it and says what
            continue
        data = _LEN.pack(len(message)) + message
        while data:  # a broken pipe (the audit's process is gone) ends the worker
            data = data[os.write(answers, data) :]

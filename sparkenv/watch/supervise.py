"""`gate --watch`'s start: the gate stays the workload's parent, a minimal supervisor, so that the watcher
outlives the workload and has written its summary when the command's status is known.

Why not exec the workload as the plain gate does: a process's end reaches its parent at once. Under
`docker run --init` (tini), dumb-init, or with the gate as PID 1, init exits with its child and the kernel
SIGKILLs the rest of the PID namespace, the watcher mid-record; on a host, a `watch --report` run next
raced the watcher. So the supervisor runs the workload as its child in a process group of its own (with
the terminal's foreground, default signal dispositions and a parent-death SIGKILL), forwards every signal
it can catch, reaps every child, waits at most FINISH_S for the watcher once the workload ended, and ends
as the workload ended (its status, or its signal; 128 + the signal as a PID 1). Each of these, and what
differs from the exec: docs/architecture.md, "The watch's supervisor".
"""

from __future__ import annotations

import contextlib
import os
import resource
import select
import signal
import subprocess
import sys
import time
from collections.abc import Callable
from typing import Any, NoReturn

from sparkenv.core import children

FINISH_S = 5.0  # at most this long from the workload's end to the watcher's summary
_UNFORWARDED = {
    signal.SIGKILL,
    signal.SIGSTOP,
    signal.SIGCHLD,
    signal.SIGTTIN,
    signal.SIGTTOU,
    signal.SIGSEGV,
    signal.SIGBUS,
    signal.SIGILL,
    signal.SIGFPE,
    signal.SIGABRT,
    signal.SIGTRAP,
    signal.SIGSYS,
}
# ignored by the interpreter itself, not by whoever started it
_PYTHONS_OWN = {signal.SIGPIPE, signal.SIGXFSZ}


def run(cmd: list[str], start_watcher: Callable[[int], Any]) -> NoReturn:
    """Start `cmd` as a child, `start_watcher(its pid)`, supervise to its end and end as it ended.
    OSError (from the start) when the workload cannot be started: nothing was started then."""
    sys.stdout.flush()
    sys.stderr.flush()
    sup = _Supervisor()
    sup.start(cmd)
    try:
        sup.watcher = start_watcher(sup.pid)
    except OSError as exc:  # the workload runs unwatched rather than not at all
        print(f"sparkenv watch: cannot start the watcher: {exc.strerror}", file=sys.stderr, flush=True)
    _end_as(sup.supervise())


class _Supervisor:
    def __init__(self) -> None:
        self.pid = 0
        self.watcher: Any = None
        self.watcher_ended = False
        self.tty: int | None = None
        self.pending: list[int] = []
        self.wake_r = -1

    def start(self, cmd: list[str]) -> None:
        self.wake_r, wake_w = os.pipe()
        for fd in (self.wake_r, wake_w):
            os.set_blocking(fd, False)
        forwarded = _forwardable()
        ignored = {s for s in forwarded if signal.getsignal(s) is signal.SIG_IGN} - _PYTHONS_OWN
        # handlers before the start, so that nothing sent meanwhile is lost; exec resets them to the
        # default in the workload. A signal ignored now stays ignored there: its handler comes after.
        signal.set_wakeup_fd(wake_w, warn_on_full_buffer=False)
        self._handle(forwarded - ignored)
        signal.signal(signal.SIGCHLD, self._note)
        self.tty = _foreground_tty()
        try:
            proc = subprocess.Popen(
                cmd, close_fds=False, restore_signals=True, preexec_fn=_child_setup(self.tty)
            )
        except OSError:
            signal.set_wakeup_fd(-1)
            raise
        self.pid = proc.pid
        with contextlib.suppress(OSError):  # the child does the same; whichever runs first wins
            os.setpgid(self.pid, self.pid)
        self._handle(ignored)

    def _handle(self, sigs: set[int]) -> None:
        for sig in sigs:
            with contextlib.suppress(OSError, ValueError):
                signal.signal(sig, self._note)

    def _note(self, signum: int, _frame: Any) -> None:
        self.pending.append(signum)

    def supervise(self) -> tuple[str, int]:
        """Forward, reap and wait; how the workload ended: ("exit", status) or ("signal", number)."""
        ended: tuple[str, int] | None = None
        deadline = 0.0
        while True:
            sigs, self.pending[:] = self.pending[:], []
            if ended is None:
                for sig in sigs:
                    if sig != signal.SIGCHLD:
                        with contextlib.suppress(ProcessLookupError):
                            os.kill(self.pid, sig)
                self._follow_a_stop()
                ended = _ended(self.pid)
                if ended is not None:
                    deadline = time.monotonic() + FINISH_S
                    self._take_back_the_tty()
            self._reap_others()
            if ended is not None and (self._watcher_done() or time.monotonic() >= deadline):
                break
            wait = None if ended is None else max(0.0, deadline - time.monotonic())
            with contextlib.suppress(InterruptedError):
                select.select([self.wake_r], [], [], wait)
            with contextlib.suppress(BlockingIOError, OSError):
                os.read(self.wake_r, 4096)
        with contextlib.suppress(ChildProcessError):
            os.waitpid(self.pid, 0)  # it ended: reaped at once
        return ended

    def _follow_a_stop(self) -> None:
        """The workload stopped (Ctrl-Z, SIGTSTP from the terminal): the supervisor holds the shell's
        job, so it stops too; when the shell continues it, the workload gets the terminal and SIGCONT."""
        if self.tty is None:
            return  # no terminal handed over: no shell to tell; a PID 1 cannot stop itself anyway
        try:
            stopped = os.waitid(os.P_PID, self.pid, os.WSTOPPED | os.WNOHANG)
        except ChildProcessError:
            return
        if stopped is None:
            return
        self._take_back_the_tty()
        os.kill(os.getpid(), signal.SIGSTOP)
        _give_tty(self.tty, self.pid)
        with contextlib.suppress(ProcessLookupError):
            os.killpg(self.pid, signal.SIGCONT)

    def _take_back_the_tty(self) -> None:
        if self.tty is not None:
            _give_tty(self.tty, os.getpgrp())

    def _watcher_done(self) -> bool:
        if self.watcher is None or self.watcher_ended:
            return True
        try:
            self.watcher_ended = os.waitpid(self.watcher.pid, os.WNOHANG)[0] != 0
        except ChildProcessError:
            self.watcher_ended = True
        return self.watcher_ended

    def _reap_others(self) -> None:
        """Reap every ended child but the workload, left unreaped for the watcher to see (the watcher's
        end is noted; an orphan handed to this process is reaped as a PID 1 must)."""
        while True:
            try:
                found = os.waitid(os.P_ALL, 0, os.WEXITED | os.WNOHANG | os.WNOWAIT)
            except ChildProcessError:
                return
            if found is None or found.si_pid == self.pid:
                return
            if self.watcher is not None and found.si_pid == self.watcher.pid:
                self._watcher_done()
                continue
            with contextlib.suppress(ChildProcessError):
                os.waitpid(found.si_pid, 0)


def _forwardable() -> set[int]:
    return {s for s in signal.valid_signals() if s not in _UNFORWARDED and 0 < s < signal.NSIG}


def _ended(pid: int) -> tuple[str, int] | None:
    """How the workload ended, without reaping it; None while it runs."""
    try:
        info = os.waitid(os.P_PID, pid, os.WEXITED | os.WNOHANG | os.WNOWAIT)
    except ChildProcessError:
        return ("exit", 0)  # reaped by someone else: cannot happen, the supervisor is its parent
    if info is None:
        return None
    if info.si_code == os.CLD_EXITED:
        return ("exit", info.si_status)
    return ("signal", info.si_status)


def _foreground_tty() -> int | None:
    """A terminal of the gate's whose foreground is the gate's process group, or None."""
    for fd in (0, 1, 2):
        with contextlib.suppress(OSError):
            if os.isatty(fd) and os.tcgetpgrp(fd) == os.getpgrp():
                return fd
    return None


def _give_tty(fd: int, pgrp: int) -> None:
    """The terminal's foreground to `pgrp`; SIGTTOU held off, as a background group must."""
    held = signal.pthread_sigmask(signal.SIG_BLOCK, {signal.SIGTTOU})
    try:
        with contextlib.suppress(OSError):
            os.tcsetpgrp(fd, pgrp)
    finally:
        signal.pthread_sigmask(signal.SIG_SETMASK, held)


def _child_setup(tty: int | None) -> Callable[[], None]:
    """The workload's side before its exec: killed with the supervisor, its own process group, the
    terminal's foreground when the gate had it."""

    die_with_parent = children.parent_death_signal()

    def setup() -> None:
        if die_with_parent is not None:
            die_with_parent()
        os.setpgid(0, 0)
        if tty is not None:
            _give_tty(tty, os.getpid())

    return setup


def _end_as(ended: tuple[str, int]) -> NoReturn:
    """Exit as the workload did: its status, or its signal (128 + N where that cannot kill, as at PID 1)."""
    how, value = ended
    sys.stdout.flush()
    sys.stderr.flush()
    if how == "signal":
        with contextlib.suppress(OSError, ValueError):
            resource.setrlimit(resource.RLIMIT_CORE, (0, 0))  # the workload's core is its own to dump
        with contextlib.suppress(OSError, ValueError):
            signal.set_wakeup_fd(-1)
            signal.signal(value, signal.SIG_DFL)
            signal.pthread_sigmask(signal.SIG_UNBLOCK, {value})
            os.kill(os.getpid(), value)
        os._exit(128 + value)
    os._exit(value)

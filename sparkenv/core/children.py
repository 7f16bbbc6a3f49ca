"""Every child process sparkenv starts: in a session of its own, registered, and killed with its group.

`spawn` starts the child with `start_new_session=True`, so `os.killpg` reaches everything it started in
its session; the registry lets a deadline, a signal or the end of a command kill every child still
running (`kill_all`). A child that leaves its session (`setsid` in a `--python` wrapper script) escapes
killpg: sparkenv is a child subreaper (Linux prctl) while children run, so such an orphan is re-parented
to sparkenv when its parent dies, and `kill_all` kills every process whose parent is sparkenv.

subprocess is imported where a child is started: the gate's default path starts none.
"""

from __future__ import annotations

import contextlib
import os
import signal
import threading
from collections.abc import Callable, Collection
from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    import subprocess

_children: set[subprocess.Popen[Any]] = set()
_lock = threading.Lock()
_PR_SET_CHILD_SUBREAPER = 36
# set in every child's environment: an orphan re-parented to sparkenv is killed only when it carries
# this sparkenv's pid (inherited from the child that started it), never a process someone else started
_MARK = "SPARKENV_CHILD_OF"
_subreaper = False
_STOPPING = (signal.SIGINT, signal.SIGTERM, signal.SIGHUP)
SIGNAL_LOOK_S = 0.2  # the longest a wait sleeps before it looks for a signal another thread received


def _become_subreaper() -> None:
    """Orphans of our children come to us, not to init, so kill_all can still find them (Linux only)."""
    global _subreaper
    if _subreaper or not os.path.exists("/proc/self"):
        return
    _subreaper = True
    import ctypes

    with contextlib.suppress(OSError, AttributeError):
        ctypes.CDLL(None, use_errno=True).prctl(_PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0)


def before_exec() -> None:
    """Undo the subreaper setting before this process execs another program (the gate's workload):
    prctl's flag survives exec, and a workload that never reaps strangers would collect zombies."""
    global _subreaper
    if not _subreaper:
        return
    _subreaper = False
    import ctypes

    with contextlib.suppress(OSError, AttributeError):
        ctypes.CDLL(None, use_errno=True).prctl(_PR_SET_CHILD_SUBREAPER, 0, 0, 0, 0)


def usable_cpus() -> int:
    """The CPUs this process may run on (its affinity, as a container's cpuset sets it): how many
    forked workers can run side by side (the audit's readers, the gate's check workers)."""
    try:
        return len(os.sched_getaffinity(0))
    except (AttributeError, OSError):
        return os.cpu_count() or 1


def spawn(
    argv: list[str],
    env: dict[str, str] | None = None,
    *,
    text: bool = False,
    stdout: Any = None,
    stderr: Any = None,
    stdin: Any = None,
    cwd: str | os.PathLike[str] | None = None,
    die_with_parent: bool = False,
) -> subprocess.Popen[Any]:
    """Start argv in its own session, registered; pipes for stdout/stderr and /dev/null for stdin unless
    given. OSError as Popen raises it (the caller names the program). `die_with_parent`: the child is
    killed when sparkenv dies, even by SIGKILL, which no handler of sparkenv's sees (Linux)."""
    import subprocess

    _become_subreaper()
    preexec = parent_death_signal() if die_with_parent else None
    env = {**(os.environ if env is None else env), _MARK: str(os.getpid())}
    # started and registered under the lock: another thread's _kill_orphans must never see this child
    # running (parent sparkenv, marked) before it is registered, or it would kill it as an orphan
    with _lock:
        proc = subprocess.Popen(
            argv,
            stdin=subprocess.DEVNULL if stdin is None else stdin,
            stdout=subprocess.PIPE if stdout is None else stdout,
            stderr=subprocess.PIPE if stderr is None else stderr,
            start_new_session=True,
            env=env,
            text=text,
            cwd=cwd,
            preexec_fn=preexec,
        )
        _children.add(proc)
    return proc


_PR_SET_PDEATHSIG = 1


def parent_death_signal() -> Callable[[], None] | None:
    """A preexec function setting the child's parent-death signal (prctl PR_SET_PDEATHSIG, SIGKILL): the
    kernel kills the child when the thread that started it ends, sparkenv's SIGKILL included. Only from
    the main thread (a helper thread's end would kill the child early); None elsewhere or off Linux."""
    if threading.current_thread() is not threading.main_thread() or not os.path.exists("/proc/self"):
        return None
    import ctypes

    try:
        prctl = ctypes.CDLL(None, use_errno=True).prctl  # looked up before the fork, not in the child
    except (OSError, AttributeError):
        return None
    parent = os.getpid()

    def preexec() -> None:
        prctl(_PR_SET_PDEATHSIG, int(signal.SIGKILL), 0, 0, 0)
        if os.getppid() != parent:  # sparkenv died between fork and prctl: the signal will never come
            os._exit(1)

    return preexec


def adopt(proc: Any) -> None:
    """Register a child started another way (the forked workers, sparkenv/core/pool.py): it
    offers `pid`, `kill()` and `wait(timeout)` as Popen does, leads its own process group, and is
    killed with every other child."""
    with _lock:
        _children.add(proc)


def kill(proc: subprocess.Popen[Any]) -> None:
    """SIGKILL the child's whole process group (and the child, should it have left the group)."""
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(proc.pid, signal.SIGKILL)
    with contextlib.suppress(OSError):
        proc.kill()


def registered() -> list[int]:
    """The pids of the children registered now (each leads its own process group), in order."""
    with _lock:
        return sorted(p.pid for p in _children)


def forget(proc: subprocess.Popen[Any]) -> None:
    with _lock:
        _children.discard(proc)


def wait(proc: subprocess.Popen[Any], timeout: float) -> None:
    """`proc.wait(timeout)`, returning the moment the child exits; subprocess.TimeoutExpired as Popen's.

    Popen.wait with a timeout polls, sleeping up to 50 ms between looks: a lock learnt of uv's exit late. A
    Linux pidfd (5.3 and later) turns readable when the process exits, and poll() wakes then; where there is
    none (another system, an older kernel, a child already reaped) Popen's own wait is used. A signal during
    the poll runs its handler as during Popen's sleeps. The poll wakes every SIGNAL_LOOK_S even so: a
    signal the kernel handed to another of sparkenv's threads (one that arrived while this thread had it
    blocked, as in a thread's start) never interrupts this thread's poll, and its handler runs only once
    this thread is back in Python code; a lock under load waited for uv's exit, past the signal."""
    import math
    import select
    import subprocess
    import time

    try:
        fd = os.pidfd_open(proc.pid)
    except (AttributeError, OSError):
        proc.wait(timeout=timeout)
        return
    deadline = time.monotonic() + timeout
    try:
        poller = select.poll()
        poller.register(fd, select.POLLIN)
        while not poller.poll(math.ceil(min(max(0.0, deadline - time.monotonic()), SIGNAL_LOOK_S) * 1000)):
            if time.monotonic() >= deadline:
                raise subprocess.TimeoutExpired(proc.args, timeout)
    finally:
        os.close(fd)
    proc.wait(timeout=timeout)  # it has exited: reaped at once


def stop(proc: subprocess.Popen[Any], reap_s: float = 5.0) -> None:
    """Kill the child's group, reap it, forget it: for a child that finished or must finish now."""
    import subprocess

    kill(proc)
    with contextlib.suppress(subprocess.TimeoutExpired, ValueError, OSError):
        proc.wait(timeout=reap_s)
    _kill_orphans()
    forget(proc)


def fork(work: Callable[[], object], register: Callable[[int], object]) -> int:
    """Fork a worker that runs `work()` and exits (0, or 1 when it raised); `register(pid)` registers it
    (with `adopt`: core/pool.py's Worker) before a signal can reach this process. The worker never returns
    into the caller's code: no `finally`, atexit handler or buffered output of the parent runs twice.
    SIGINT, SIGTERM and SIGHUP kill it outright. It leads a process group of its own (what it starts is
    killed with it). OSError when the fork fails."""
    # held off from the fork until the worker is registered: a Ctrl-C raised in between would leave a
    # worker no kill_all finds, and one raised in the worker before its handlers are reset would run
    # the parent's handler there; what arrived meanwhile is delivered right after
    held = signal.pthread_sigmask(signal.SIG_BLOCK, _STOPPING)
    try:
        pid = os.fork()
        if pid == 0:  # pragma: no cover - the worker's side; tests see its effects
            code = 1
            try:
                from sparkenv.core import signals

                # the parent's handlers would raise into its own code here; a signal it ignores stays so
                signals.install_handler(signal.SIG_DFL, _STOPPING)  # type: ignore[arg-type]
                signal.pthread_sigmask(signal.SIG_SETMASK, held)
                with contextlib.suppress(OSError):
                    os.setpgid(0, 0)
                work()
                code = 0
            finally:
                os._exit(code)
        with contextlib.suppress(OSError):  # the worker does the same; whichever runs first wins
            os.setpgid(pid, pid)
        register(pid)
    finally:
        signal.pthread_sigmask(signal.SIG_SETMASK, held)
    return pid


def kill_all(spare: Collection[Any] = ()) -> int:
    """Kill every registered child's process group, reaping what can be reaped without waiting, then
    the orphans re-parented to sparkenv; how many registered children (forked workers among them) there
    were. `spare`: registered children left running and registered (the gate's check workers, which
    still wait for the facts when its probes are done: sparkenv/gate/run.py)."""
    with _lock:
        procs = [p for p in _children if p not in spare]
        _children.difference_update(procs)
    if not procs:
        _kill_orphans()
        return 0
    import subprocess

    for proc in procs:
        kill(proc)
        with contextlib.suppress(subprocess.TimeoutExpired):
            proc.wait(timeout=0.05)
    _kill_orphans()
    return len(procs)


def _kill_orphans() -> None:
    """Processes whose parent is sparkenv but that it never started: a child's `setsid` descendants,
    re-parented here (subreaper) when that child died. Killed with their own groups."""
    if not _subreaper:
        return
    me = os.getpid()
    with _lock:
        started = {p.pid for p in _children}
    for entry in _proc_entries():
        try:
            # the command name may hold spaces and parentheses: the fields follow its last ')'
            ppid = int((entry / "stat").read_text().rsplit(")", 1)[1].split()[1])
        except (OSError, ValueError, IndexError):
            continue
        pid = int(entry.name)
        if ppid != me or pid in started or not _marked(entry, me):
            continue
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.killpg(os.getpgid(pid), signal.SIGKILL)
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.kill(pid, signal.SIGKILL)
        _reap(pid)


def _reap(pid: int, wait_s: float = 0.5) -> None:
    """Collect a killed orphan's exit status (it is our child now), so no zombie stays behind."""
    import time

    stop = time.monotonic() + wait_s
    while True:
        try:
            done, _ = os.waitpid(pid, os.WNOHANG)
        except ChildProcessError:
            return
        if done or time.monotonic() > stop:
            return
        time.sleep(0.01)


def _marked(entry: Path, me: int) -> bool:
    try:
        return f"{_MARK}={me}".encode() in (entry / "environ").read_bytes().split(b"\0")
    except OSError:
        return False


def _proc_entries() -> list[Path]:
    """The /proc entries of the processes that may be orphans re-parented here: this process's children
    as its threads list them (a handful, where reading every process's stat costs milliseconds on a busy
    host, after every uv a lock runs), else every process."""
    own = _own_children()
    if own is not None:
        return [Path("/proc") / str(pid) for pid in sorted(own)]
    try:
        return [e for e in Path("/proc").iterdir() if e.name.isdigit()]
    except OSError:
        return []


def _own_children() -> set[int] | None:
    """The pids /proc/self/task/*/children names; None where the kernel does not list them or a thread
    ended while they were read (the caller then reads every process)."""
    pids: set[int] = set()
    try:
        for task in os.listdir("/proc/self/task"):
            with open(f"/proc/self/task/{task}/children", encoding="ascii") as fh:
                pids.update(int(pid) for pid in fh.read().split())
    except (OSError, ValueError):
        return None
    return pids


def identity(pid: int | None = None) -> str | None:
    """ "PID STARTTIME" of a process (this one by default): its pid and its start in clock ticks since
    boot (/proc/PID/stat), which together name it even after the pid is reused; None when it is gone or
    there is no /proc."""
    pid = os.getpid() if pid is None else pid
    try:
        fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
        return f"{pid} {int(fields[19])}"
    except (OSError, ValueError, IndexError):
        return None


def alive(ident: str) -> bool:
    """Whether the process `identity` named is still running (a zombie counts as gone; a text that
    names no process counts as alive: nothing is taken from an owner that cannot be told dead)."""
    try:
        pid, _ = ident.split()
        pid_n = int(pid)
    except ValueError:
        return True
    if pid_n <= 0:
        return True
    now = identity(pid_n)
    if now != ident:
        return False
    try:
        state = Path(f"/proc/{pid_n}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except (OSError, IndexError):
        return False
    return state != "Z"

"""children.wait: the wait for a child's exit that the lock (uv) and the gate (its probes) use, with real
processes. It must return with the exit status once the child is gone, and raise Popen's TimeoutExpired
with the child still running when the child outlives the timeout (the caller then kills it)."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import threading

import pytest

from sparkenv.core import children

PY = sys.executable


def test_wait_returns_the_exit_status_once_the_child_exits():
    proc = children.spawn([PY, "-c", "import sys, time; time.sleep(0.2); sys.exit(7)"])
    try:
        children.wait(proc, 1e9)  # `lock --timeout 1e9` is valid: more milliseconds than poll() takes
        assert proc.returncode == 7
    finally:
        children.stop(proc)


def test_wait_sees_a_child_killed_by_a_signal():
    proc = children.spawn([PY, "-c", "import time; time.sleep(60)"])
    try:
        threading.Timer(0.2, os.kill, (proc.pid, signal.SIGTERM)).start()
        children.wait(proc, 30.0)
        assert proc.returncode == -signal.SIGTERM
    finally:
        children.stop(proc)


def test_a_child_outliving_the_timeout_raises_and_is_still_running():
    proc = children.spawn([PY, "-c", "import time; time.sleep(60)"])
    try:
        with pytest.raises(subprocess.TimeoutExpired):
            children.wait(proc, 0.3)
        assert proc.poll() is None  # not reaped nor killed by the wait: the caller decides
    finally:
        children.stop(proc)
    assert proc.returncode == -signal.SIGKILL


def test_a_child_already_reaped_returns_at_once():
    proc = children.spawn([PY, "-c", "pass"])
    proc.wait(timeout=30)
    children.wait(proc, 0.0)  # no pidfd can be opened for a reaped pid: Popen's own wait answers
    assert proc.returncode == 0
    children.forget(proc)


def test_without_pidfd_popens_wait_is_used(monkeypatch: pytest.MonkeyPatch):
    # a fake for a fault that cannot be caused here: a kernel older than 5.3 (or another system) has no
    # pidfd_open; the wait must then still work, through Popen's polling wait
    monkeypatch.delattr(os, "pidfd_open", raising=False)
    proc = children.spawn([PY, "-c", "import sys; sys.exit(3)"])
    try:
        children.wait(proc, 30.0)
        assert proc.returncode == 3
        slow = children.spawn([PY, "-c", "import time; time.sleep(60)"])
        try:
            with pytest.raises(subprocess.TimeoutExpired):
                children.wait(slow, 0.2)
        finally:
            children.stop(slow)
    finally:
        children.stop(proc)


SIGNAL_TO_ANOTHER_THREAD = """
import signal, sys, threading, time
from sparkenv.core import children, signals
children.SIGNAL_LOOK_S = float(sys.argv[1])
signals.install()
child = children.spawn([sys.executable, "-c", "import time; time.sleep(10)"])
ready = threading.Event()
def helper():
    ready.set()
    time.sleep(60)
t = threading.Thread(target=helper, daemon=True)
t.start()
ready.wait()
def send():
    time.sleep(0.5)
    signal.pthread_kill(t.ident, signal.SIGTERM)  # the kernel hands it to the helper, not to the waiter
threading.Thread(target=send, daemon=True).start()
try:
    children.wait(child, float(sys.argv[2]))
    print("returned")
except subprocess_timeout:
    print("timed out: the signal was never seen")
except signals.Terminated:
    running = child.poll() is None
    print("terminated, the child still running" if running else "terminated once the child exited")
finally:
    children.stop(child)
""".replace("subprocess_timeout", "__import__('subprocess').TimeoutExpired")


def _signal_to_another_thread(look_s: str, timeout_s: str) -> str:
    r = subprocess.run([PY, "-c", SIGNAL_TO_ANOTHER_THREAD, look_s, timeout_s], capture_output=True,
                       text=True, timeout=120)  # fmt: skip
    return r.stdout.strip() or r.stderr


def test_a_signal_another_thread_received_ends_the_wait():
    """SIGTERM taken by another of sparkenv's threads (as when it arrives while the waiting thread has it
    blocked, e.g. in a thread's start) never interrupts the waiter's poll: the wait still ends on it, as
    Terminated, while the child runs; a lock under load waited for uv's exit instead."""
    assert (
        _signal_to_another_thread(str(children.SIGNAL_LOOK_S), "60") == "terminated, the child still running"
    )


def test_without_looking_again_that_signal_is_missed():
    """The same with one poll for the whole wait (as before): the waiter sleeps through the signal until
    the child exits (10 s), the case the periodic look is for (so the test above can fail)."""
    assert _signal_to_another_thread("1e6", "60") == "terminated once the child exited"

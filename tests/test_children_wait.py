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

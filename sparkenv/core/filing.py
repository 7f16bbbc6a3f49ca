"""Cache files a lock makes after uv's exit, made by one thread beside the judgement.

Making a file is kernel work (a temporary opened, written, renamed into place), and once uv's pylock names
each file's sha256 a large project's lock files the answers read early at their URLs under it
(lock/wheel_files.py, index/metadata.py): tens of files between uv's exit and the lock. That kernel work
runs without the GIL, and once uv has exited both cores are free: one thread makes the files while the main
thread judges. Each text is kept in memory for the process too (`kept`), so a reader that asks before its
file exists finds it there instead of downloading it again.

`wait()` ends the filing, every queued file made or given up (a cache that cannot be written only costs
time, as resolve/metadata.store says); the lock calls it on every way out, atexit for any other caller.
"""

from __future__ import annotations

import atexit
import contextlib
import queue
import threading
from pathlib import Path

_KEPT: dict[Path, str] = {}  # path -> text, of every file queued by this process
_lock = threading.Lock()
# the filing thread under way and its queue (each thread its own: one started after a wait() never
# takes the end-mark meant for the one before)
_current: tuple[threading.Thread, queue.SimpleQueue[tuple[Path, str] | None]] | None = None


def later(path: Path, text: str) -> None:
    """Make the cache file `path` holding `text` (through sparkenv.core.outputs, which redacts), on the
    filing thread; `kept(path)` answers it from now on."""
    global _current
    with _lock:
        _KEPT[path] = text
        if _current is None:
            todo: queue.SimpleQueue[tuple[Path, str] | None] = queue.SimpleQueue()
            # a daemon, joined by wait(): sparkenv's exit (process_exit.leave) skips the interpreter's
            # teardown only when no other thread is left, and runs the atexit hook that waits for this one
            thread = threading.Thread(target=_write, args=(todo,), name="sparkenv-filing", daemon=True)
            thread.start()
            _current = (thread, todo)
        _current[1].put((path, text))


def kept(path: Path) -> str | None:
    """The text queued for `path` in this process, made or not yet; None when none was."""
    return _KEPT.get(path)


def wait() -> None:
    """Return once every file queued so far is made or given up."""
    global _current
    with _lock:
        current, _current = _current, None
    if current is not None:
        current[1].put(None)
        current[0].join()


def _write(todo: queue.SimpleQueue[tuple[Path, str] | None]) -> None:
    from sparkenv.core import outputs

    while (item := todo.get()) is not None:
        with contextlib.suppress(Exception):  # a file not made costs the next lock a read, no more
            outputs.write_one(item[0], item[1], make_parents=True)


atexit.register(wait)

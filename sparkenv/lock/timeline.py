"""The lock's own timeline, for benchmarks/lock_speed.py --breakdown: where the wall time goes beside the
uv it drives (interpreter up, uv spawned, uv exited, lock written, process exit).

Off unless SPARKENV_LOCK_TIMELINE names a file: then each mark is the wall clock (time.time(), comparable
with the benchmark's own clock across processes), the main thread's CPU and the process's CPU at that
point, and the marks are appended to the file as one JSON line when the process leaves. Nothing else is
written; the marks hold names and numbers only."""

from __future__ import annotations

import os
import time

_PATH = os.environ.get("SPARKENV_LOCK_TIMELINE")
_marks: list[tuple[str, float, float, float]] = []


def mark(name: str) -> None:
    if _PATH:
        _marks.append((name, time.time(), time.thread_time(), time.process_time()))


def flush() -> None:
    """Append the marks (once) as one JSON line: {"marks": [[name, wall, main CPU, process CPU], ...]}."""
    if not (_PATH and _marks):
        return
    import json

    mark("exit")
    line = json.dumps({"pid": os.getpid(), "marks": _marks})
    _marks.clear()
    try:
        with open(_PATH, "a", encoding="utf-8") as fh:
            fh.write(line + "\n")
    except OSError:
        pass  # a benchmark's aid never fails the lock

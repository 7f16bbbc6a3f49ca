"""SIGTERM and SIGHUP during `sparkenv lock`: stop uv's process group, remove the work folder, say so.

The handler raises Terminated in the main thread; the code that started uv kills its process group in a
`finally`, the lock's work folder goes in another, and the command ends with 128 + the signal's number
(143 for SIGTERM, 129 for SIGHUP) and one line naming what was cleaned.
"""

from __future__ import annotations

import contextlib
import signal
import threading
from collections.abc import Iterator

from sparkenv.errors import SparkenvError

SIGNALS = (signal.SIGTERM, signal.SIGHUP)
# Process groups of the uv processes running now (uvdriver adds and removes them).
running: set[int] = set()


class Terminated(SparkenvError):
    def __init__(self, signum: int) -> None:
        self.signum = signum
        self.groups = sorted(running)
        self.exit_code = 128 + signum
        super().__init__(signal.Signals(signum).name)

    def cleaned(self, what: str) -> SparkenvError:
        err = SparkenvError(f"lock stopped by {signal.Signals(self.signum).name}: {what}; no lock written")
        err.exit_code = self.exit_code
        return err


@contextlib.contextmanager
def raising() -> Iterator[None]:
    """Turn SIGTERM/SIGHUP into Terminated while the block runs (main thread only; elsewhere a no-op)."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return

    def handler(signum: int, _frame: object) -> None:
        raise Terminated(signum)

    previous = {s: signal.signal(s, handler) for s in SIGNALS}
    try:
        yield
    finally:
        for s, h in previous.items():
            signal.signal(s, h)

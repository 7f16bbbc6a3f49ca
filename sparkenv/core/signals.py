"""SIGTERM and SIGHUP handled like Ctrl-C: the same clean-up runs, then exit 128 + the signal's number.

Python's default SIGTERM kills the process where it stands: no `finally` runs, so `sparkenv build` left
its verification container behind and temporaries stayed. `install()` turns SIGTERM/SIGHUP into
`Terminated`, a KeyboardInterrupt, so every clean-up already written for Ctrl-C runs for them too.
Code that cleans something up on the way out says so with `cleaned(...)`; the CLI prints one line:
`sparkenv: terminated (SIGTERM); removed the verification container; no tag moved`.

The handler raises once: a second signal during clean-up does not cut the clean-up short (every call it
makes has its own timeout). Handlers installed here are reset by exec, so a workload the gate execs gets
the default dispositions back.
"""

from __future__ import annotations

import contextlib
import signal
import threading
from collections.abc import Callable, Iterator
from types import FrameType
from typing import Any

_HANDLED = (signal.SIGTERM, signal.SIGHUP)


class Terminated(KeyboardInterrupt):
    """The process was asked to stop by a signal other than SIGINT."""

    def __init__(self, signum: int) -> None:
        super().__init__(signal.Signals(signum).name)
        self.signum = signum


_received: int | None = None
_cleaned: list[str] = []


def _handler(signum: int, frame: FrameType | None) -> None:
    global _received
    if _received is not None:
        return  # already stopping: let the clean-up finish
    _received = signum
    raise Terminated(signum)


def install_handler(
    handler: Callable[[int, FrameType | None], Any], sigs: tuple[int, ...] = _HANDLED
) -> Callable[[], None]:
    """The one place sparkenv sets a signal handler: `handler` for each of `sigs`, except one the
    parent asked to ignore (nohup keeps SIGHUP ignored), and only from the main thread (elsewhere
    Python refuses; nothing is set). Returns the function that puts the previous handlers back."""
    previous: dict[int, Any] = {}
    if threading.current_thread() is threading.main_thread():
        for sig in sigs:
            if sig != signal.SIGINT and signal.getsignal(sig) is signal.SIG_IGN:
                continue
            with contextlib.suppress(ValueError, OSError):  # a signal this platform lacks
                previous[sig] = signal.signal(sig, handler)

    def restore() -> None:
        for sig, old in previous.items():
            signal.signal(sig, old)

    return restore


def install() -> None:
    """SIGTERM and SIGHUP raise Terminated for the rest of the run (the CLI's start)."""
    install_handler(_handler)


@contextlib.contextmanager
def raising() -> Iterator[None]:
    """SIGTERM and SIGHUP raise Terminated while the block runs, as under the CLI (for a library caller
    that did not install()); the previous handlers come back after."""
    restore = install_handler(_handler)
    try:
        yield
    finally:
        restore()


def record(signum: int) -> None:
    """A handler of its own stopped the run on `signum` (the gate's, while it probes): received() says so."""
    global _received
    if _received is None:
        _received = signum


def received() -> int | None:
    """The signal that stopped the run (SIGTERM, SIGHUP), or None (Ctrl-C, or none)."""
    return _received


def cleaned(what: str) -> None:
    """Record a clean-up done because the run was interrupted, for the closing line."""
    if what not in _cleaned:
        _cleaned.append(what)


def on_interrupt(what: str) -> None:
    """Something that holds if the run is stopped from now on (`no tag moved`), until `forget`."""
    cleaned(what)


def forget(what: str) -> None:
    if what in _cleaned:
        _cleaned.remove(what)


def closing_line(signum: int | None) -> tuple[str, int]:
    """The one line printed when a run is stopped, and its exit status (130 for SIGINT, 143 SIGTERM)."""
    signum = signum or signal.SIGINT
    said = "interrupted" if signum == signal.SIGINT else f"terminated ({signal.Signals(signum).name})"
    return "; ".join([f"sparkenv: {said}", *_cleaned]), 128 + signum

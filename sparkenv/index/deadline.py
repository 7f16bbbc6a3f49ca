"""How long the package index may take: a deadline for each request and one for everything a lock asks
of it (uv's requests and sparkenv's own), with one message for when either passes.

A socket timeout bounds one read, not a request: an index that sends a byte a second answers every read
in time and never ends. Here a request has a deadline for the whole of it — connection, headers and
body — kept by one watchdog thread that shuts the socket down when it passes (the read then ends at
once, whatever it was waiting on, TLS included); the request then raises `Expired`, a TimeoutError
(an OSError, which every reader of the index already handles as "cannot be read"). The total deadline
is the lock's `--timeout`: past it no request is sent and uv is stopped (lock/uv_process.py). uv's own
requests get the same per-request bound through UV_HTTP_TIMEOUT, which bounds uv's whole request (its
retries aside).
"""

from __future__ import annotations

import contextlib
import heapq
import itertools
import threading
import time
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:  # imported where a socket is shut down: a lock imports this module before uv's spawn
    import socket

REQUEST_S = 30.0  # uv's documented default for UV_HTTP_TIMEOUT: one page, one metadata file, one range
TOTAL_S = 180.0  # the lock's --timeout: a cold lock of a large project takes a fraction of it
PROGRESS_S = 15.0  # a lock still waiting after this long says so (with a terminal), then again as often

request_s = REQUEST_S
total_s: float | None = None  # set by start(): None outside a lock (a request has its own bound only)
_total_end: float | None = None
say: Callable[[str], None] | None = None  # the lock's progress line, with a terminal
expired_requests = 0  # requests cut at their deadline in this process
total_passed = False  # a request was cut, or not sent, because the total deadline had passed


class Expired(TimeoutError):
    """A request to the index, or the lock's whole work with it, passed its deadline."""


def start(request: float, total: float, progress: Callable[[str], None] | None = None) -> None:
    """The deadlines of this process's work with the index, from now (a lock's start); `progress` says
    a line while the lock waits long on the index (None: nothing is said)."""
    global request_s, total_s, _total_end, say
    request_s, total_s, say = request, total, progress
    _total_end = time.monotonic() + total


def remaining() -> float | None:
    """Seconds left of the total deadline; None when none was set."""
    return None if _total_end is None else _total_end - time.monotonic()


def message(seconds: float, option: str) -> str:
    """The one line for an index that did not answer in time (no host in it: a URL may carry a token)."""
    return f"the package index did not answer within {seconds:g} s ({option})"


def total_message() -> str:
    return message(total_s if total_s is not None else TOTAL_S, "--timeout")


def request_message() -> str:
    return message(request_s, "--request-timeout")


def bound(timeout: float) -> tuple[float, str]:
    """The deadline in seconds of a request asked with `timeout` (the per-request deadline or the total's
    rest, whichever comes first), and the line that says it passed. Expired when the total has passed:
    nothing more is sent."""
    global total_passed
    left = remaining()
    if left is not None and left <= 0:
        total_passed = True
        raise Expired(total_message())
    if left is not None and left < min(timeout, request_s):
        return left, total_message()
    if request_s <= timeout:
        return request_s, request_message()
    return timeout, message(timeout, "the request's own timeout")


class Watch:
    """One request's deadline: `cut()` by the watchdog when it passes, `done()` by the request; `says`
    the line of its Expired."""

    __slots__ = ("cut_at", "finished", "fired", "says", "sock")

    def __init__(self, sock: socket.socket | None, cut_at: float, says: str) -> None:
        self.sock, self.cut_at, self.says = sock, cut_at, says
        self.fired = self.finished = False

    def done(self) -> None:
        self.finished = True

    def cut(self) -> None:
        global expired_requests
        if self.finished or self.sock is None:
            return
        global total_passed
        self.fired = True
        expired_requests += 1
        total_passed = total_passed or self.says == total_message()
        import socket

        with contextlib.suppress(OSError):  # the plain socket's shutdown, not TLS's: wakes the blocked read
            socket.socket.shutdown(self.sock, socket.SHUT_RDWR)


_heap: list[tuple[float, int, Watch]] = []
_cond = threading.Condition()
_count = itertools.count()
_thread: threading.Thread | None = None


def watch(sock: Any, seconds: float, says: str) -> Watch:
    """Shut `sock` down `seconds` from now unless the request is done() by then."""
    global _thread
    w = Watch(sock, time.monotonic() + seconds, says)
    with _cond:
        heapq.heappush(_heap, (w.cut_at, next(_count), w))
        if _thread is None:
            _thread = threading.Thread(target=_watchdog, name="sparkenv-index-deadline", daemon=True)
            _thread.start()
        elif _heap[0][2] is w:
            _cond.notify()
    return w


def _watchdog() -> None:
    while True:
        with _cond:
            while _heap and _heap[0][2].finished:
                heapq.heappop(_heap)
            if not _heap:
                _cond.wait()
                continue
            wait = _heap[0][0] - time.monotonic()
            if wait > 0:
                _cond.wait(wait)
                continue
            w = heapq.heappop(_heap)[2]
        w.cut()

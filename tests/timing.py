"""Time in tests without a fixed wall-clock bound that a loaded machine can break.

A promise like "a hung probe cannot hold the gate past its deadline" is checked against the same
command timed without the hang, on the same machine, in the same test: what the hang may add is the
promised deadline (plus the one second the gate allows itself to stop and reap), and the rest scales with
this machine's pace at that moment. A wait that can run out ends in an assertion saying what did not
happen."""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import TypeVar

T = TypeVar("T")

# How many times the baseline the run with the hang may take besides its promised seconds: the run
# with the hang does what the baseline does, plus killing and reaping what hung.
PACE = 3.0


def timed(fn: Callable[[], T]) -> tuple[T, float]:
    """fn's value and the monotonic seconds it took."""
    started = time.monotonic()
    value = fn()
    return value, time.monotonic() - started


def assert_kept(elapsed: float, *, promised: float, baseline: float, what: str) -> None:
    """`elapsed` is within the `promised` seconds plus PACE times the `baseline` (the same command
    without what should be cut short, timed in the same test) plus one second to stop and reap."""
    bound = promised + 1.0 + PACE * baseline
    assert elapsed <= bound, (
        f"{what} took {elapsed:.2f} s: more than its promised {promised:g} s + 1 s + {PACE:g} × "
        f"{baseline:.2f} s (the same run without the hang, timed just before on this machine)"
    )


def wait_for(ready: Callable[[], bool], *, timeout: float, what: str, every: float = 0.05) -> None:
    """Poll `ready` until it is true; past `timeout` seconds, fail saying `what` did not happen."""
    end = time.monotonic() + timeout
    while not ready():
        assert time.monotonic() < end, f"{what} did not happen within {timeout:g} s"
        time.sleep(every)

"""Numbers a user gives, bounded before use: what the clock and the OS can represent.

A duration goes into `threading.Event.wait`, `subprocess` timeouts and `time.monotonic() + s`; past
`threading.TIMEOUT_MAX` (~292 years) those raise OverflowError (`gate --deadline 1e10` was an internal
error, exit 70). Thirty days is far beyond any real deadline or resolver timeout and far within every
limit, so one bound serves every duration option.
"""

from __future__ import annotations

import math

MAX_SECONDS = 30 * 86400


def seconds_problem(value: float, *, zero_ok: bool) -> str | None:
    """Why `value` is not a usable duration in seconds (None when it is): finite, > 0 (≥ 0 with
    zero_ok), at most MAX_SECONDS."""
    if not math.isfinite(value) or value < 0 or (value == 0 and not zero_ok):
        return f"must be a finite number {'≥ 0' if zero_ok else '> 0'}, not {value:g}"
    if value > MAX_SECONDS:
        return f"{value:g} s is over the {MAX_SECONDS} s (30 days) sparkenv accepts"
    return None

"""The statistics the benchmarks print: a median's bootstrap interval and the interquartile range.
Standard library only (the gate's benchmark runs on machines with nothing else installed)."""

from __future__ import annotations

import random
import statistics


def bootstrap(values: list[float], rng: random.Random, n: int = 4000) -> tuple[float, float]:
    """90 % interval of the median of `values`, by resampling."""
    meds = sorted(statistics.median(rng.choices(values, k=len(values))) for _ in range(n))
    return meds[int(0.05 * n)], meds[int(0.95 * n) - 1]


def iqr(values: list[float]) -> float:
    q = statistics.quantiles(values, n=4) if len(values) > 1 else [0.0, 0.0, 0.0]
    return q[2] - q[0]

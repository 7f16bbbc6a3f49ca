"""The gate's ten checks: pure functions from a facts snapshot (GateFacts) to findings."""

from __future__ import annotations

from collections.abc import Callable

from sparkenv.gate.checks import (
    g1_cuda_runtime,
    g2_attention,
    g3_memory,
    g4_thermal,
    g5_bandwidth,
    g6_contention,
    g7_precision,
    g8_playbooks,
    g9_container,
    g10_parallelism,
)
from sparkenv.gate.view import GateFacts
from sparkenv.report import Finding

CHECKS: tuple[tuple[str, Callable[[GateFacts], list[Finding]]], ...] = (
    ("G1", g1_cuda_runtime.check),
    ("G2", g2_attention.check),
    ("G3", g3_memory.check),
    ("G4", g4_thermal.check),
    ("G5", g5_bandwidth.check),
    ("G6", g6_contention.check),
    ("G7", g7_precision.check),
    ("G8", g8_playbooks.check),
    ("G9", g9_container.check),
    ("G10", g10_parallelism.check),
)

"""G5 live: the memory-bandwidth budget (measured, not spec), and a measurement with --bandwidth."""

from __future__ import annotations

from functools import partial
from typing import TYPE_CHECKING

from sparkenv.core.report import Finding, GotchaId, Status
from sparkenv.knowledge import gate
from sparkenv.rules import Rule, Stage

if TYPE_CHECKING:
    from sparkenv.facts.live import GateFacts

_finding = partial(Finding, GotchaId.G5)  # every finding of this module is G5's


def live(f: GateFacts) -> list[Finding]:
    b = gate().bandwidth
    budget = f"{b.measured_low:g}–{b.measured_high:g} GB/s"
    measured = f.torch_stages.get("bandwidth")
    if measured and measured.get("gb_per_s"):
        gbps = float(measured["gb_per_s"])
        evidence = (f"device copy of {measured['bytes'] / 2**20:.0f} MiB, median of {measured['iters']}",)
        if f.is_gb10 and gbps < 0.9 * b.measured_low:
            return [
                _finding(
                    status=Status.WARN,
                    summary=f"measured {gbps:g} GB/s, below the {budget} a GB10 sustains",
                    subject="bandwidth",
                    evidence=evidence,
                    fix="look for other GPU work (G6) or throttling (G4)",
                )
            ]
        where = (
            f"GB10 budget {budget}" if f.is_gb10 else f"{f.gpu_name or 'this GPU'}; GB10 budget is {budget}"
        )
        return [
            _finding(
                status=Status.INFO,
                summary=f"measured {gbps:g} GB/s device copy ({where})",
                subject="bandwidth",
                evidence=evidence,
            )
        ]
    if f.platform == "no-gpu":
        return [
            _finding(
                status=Status.SKIP,
                summary=f"no GPU: nothing to measure (a GB10 sustains {budget})",
                subject="bandwidth",
            )
        ]
    if f.is_gb10:
        return [
            _finding(
                status=Status.INFO,
                summary=f"plan with {budget} sustained, not the {b.spec:g} GB/s spec (--bandwidth "
                "measures it)",
                subject="bandwidth",
            )
        ]
    return [
        _finding(
            status=Status.INFO,
            summary=f"not a GB10: its budget is {budget}; --bandwidth measures this GPU",
            subject="bandwidth",
        )
    ]


RULES = (
    Rule(
        Stage.LIVE,
        live,
        "the GB10's bandwidth budget from data/gate.toml; with --bandwidth, a timed device copy",
    ),
)

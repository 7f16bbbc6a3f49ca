"""G2 at Stage.ATTEST (`sparkenv attest`, `gate --attest`): the attention backend the workload's kernels
actually ran, against the one asked for (SDPA or flash-attn), with its share of the window's GPU time."""

from __future__ import annotations

from functools import partial
from typing import TYPE_CHECKING

from sparkenv.core.report import Finding, GotchaId, Status
from sparkenv.rules.attest_kernels import attention as backend_of
from sparkenv.rules.attest_kernels import backends, capability, library, ms, percent, slower_paths

if TYPE_CHECKING:
    from sparkenv.facts.attest import AttestFacts

_finding = partial(Finding, GotchaId.G2, subject="attention")
_WANTED = {"sdpa": "SDPA", "flash-attn": "flash-attn"}


def attention(facts: AttestFacts) -> list[Finding]:
    if not facts.records:
        return [
            _finding(status=Status.SKIP, summary="no attest record: no process loaded torch with the probe")
        ]
    rows = facts.kernels
    total = sum(r.gpu_ns for r in rows)
    if not total:
        return [_finding(status=Status.SKIP, summary="no GPU kernel ran in the window: attention not seen")]
    ran = backends(rows, facts.defined_in)
    why = (facts.wanted_why,) if facts.wanted_why else ()
    if not ran:
        return [
            _finding(
                status=Status.INFO,
                summary=f"no attention kernel ran in the window ({ms(total)} of GPU time in other kernels)",
                evidence=why,
            )
        ]
    evidence = (
        tuple(
            f"{a.name}: {ms(ns)}, {percent(ns, total)} of GPU time, {n:,} launches ({a.source})"
            for a, n, ns in ran
        )
        + why
    )
    said = ", ".join(f"{a.name} ({percent(ns, total)} of GPU time)" for a, _n, ns in ran)
    wanted = facts.attention_wanted
    wrong = [(a, ns) for a, _n, ns in ran if wanted in _WANTED and a.api != wanted]
    if wrong:
        names = ", ".join(a.name for a, _ in wrong)
        share = percent(sum(ns for _, ns in wrong), total)
        evidence += _defined_by(facts, {a.name for a, _ in wrong})
        fix = (
            "make the model's attention SDPA: install the SDPA override (sparkenv patch sdpa --install) or "
            "uninstall flash-attn; see `sparkenv explain G2`"
            if wanted == "sdpa"
            else "check that flash_attn imports and runs in this environment (sparkenv gate --deep)"
        )
        return [
            _finding(
                status=Status.FAIL,
                summary=f"attention ran {names}, not the {_WANTED[wanted]} asked for: {share} of the "
                "window's GPU time",
                evidence=evidence,
                fix=fix,
            )
        ]
    for slow in slower_paths(rows, capability(facts.records), "G2", facts.defined_in):
        share = percent(slow.gpu_ns, total)
        what = f"attention ran {' / '.join(slow.path.slow)}, the fallback: {share} of the window's GPU time"
        note = f"; all backends: {said}"
        if slow.hot and slow.faster_here:
            return [
                _finding(
                    status=Status.WARN,
                    summary=f"{what}, while {', '.join(slow.path.faster)} exist for SM "
                    f"{slow.capability[0]}.{slow.capability[1]}{note}",  # type: ignore[index]
                    evidence=(*evidence, f"why it happens: {slow.path.why} ({slow.path.source})"),
                    fix=slow.path.fix,
                )
            ]
        if slow.hot:
            where = (
                f"SM {slow.capability[0]}.{slow.capability[1]}" if slow.capability else "a GPU not recorded"
            )
            return [
                _finding(
                    status=Status.INFO,
                    summary=f"{what}; the data names no faster backend for {where}{note}",
                    evidence=evidence,
                )
            ]
    asked = f" as asked ({_WANTED[wanted]})" if wanted in _WANTED else ""
    return [_finding(status=Status.PASS, summary=f"attention ran {said}{asked}", evidence=evidence)]


def _defined_by(facts: AttestFacts, names: set[str]) -> tuple[str, ...]:
    """Where the kernels of these backends come from: the libraries that define them, and how that was
    found (symbol table or name pattern)."""
    found: dict[tuple[str, str], int] = {}
    for r in facts.kernels:
        a = backend_of(r, facts.defined_in)
        if a is not None and a.name in names:
            key = library(r.name, facts.defined_in)
            found[key] = found.get(key, 0) + r.gpu_ns
    return tuple(
        f"its kernels come from {lib} (by {how}): {ms(ns)}" for (lib, how), ns in sorted(found.items())
    )

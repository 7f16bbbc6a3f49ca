"""G3 live: unified memory as /proc/meminfo sees it (MemAvailable, page cache), not nvidia-smi."""

from __future__ import annotations

from functools import partial
from typing import TYPE_CHECKING

from sparkenv.knowledge import gate
from sparkenv.report import Finding, GotchaId, Status
from sparkenv.rules import Rule, Stage

if TYPE_CHECKING:
    from sparkenv.facts.live import GateFacts

_finding = partial(Finding, GotchaId.G3)  # every finding of this module is G3's

GIB = 1 << 20  # kB per GiB
DROP = "between runs, as root: sync; echo 3 > /proc/sys/vm/drop_caches (sparkenv never does it itself)"


def live(f: GateFacts) -> list[Finding]:
    err = f.error_finding(GotchaId.G3, "meminfo", "memory")
    if err:
        return [err]
    m = f.section("meminfo") or {}
    total, avail = m.get("MemTotal"), m.get("MemAvailable")
    if not total or avail is None:
        return [
            _finding(
                status=Status.ERROR,
                summary="/proc/meminfo has no MemTotal/MemAvailable",
                subject="memory",
            )
        ]
    cache = m.get("Cached", 0) + m.get("Buffers", 0)
    limits = gate().memory
    evidence = [
        f"MemTotal {total / GIB:.1f} GiB",
        f"MemAvailable {avail / GIB:.1f} GiB",
        f"page cache (Cached+Buffers) {cache / GIB:.1f} GiB",
    ]
    gpu0 = f.gpu0 or {}
    if f.is_gb10 and gpu0.get("memory.total") is None:
        evidence.append("nvidia-smi shows memory as Not Supported / [N/A]: expected on GB10 (unified memory)")
    d = f.device or {}
    if d.get("mem_get_info"):
        free, tot = d["mem_get_info"]
        evidence.append(f"torch.cuda.mem_get_info: {free / 2**30:.1f} GiB free of {tot / 2**30:.1f} GiB")
    summary = f"MemAvailable {avail / GIB:.1f} GiB of {total / GIB:.1f} GiB; page cache {cache / GIB:.1f} GiB"
    if f.need_gb and avail / GIB < f.need_gb:
        return [
            _finding(
                status=Status.WARN,
                summary=f"{summary}: below the {f.need_gb:g} GiB this run needs",
                subject="memory",
                evidence=tuple(evidence),
                fix=f"free memory first: stop other jobs; {DROP}",
            )
        ]
    if cache > limits.page_cache_warn_fraction * total:
        return [
            _finding(
                status=Status.WARN,
                summary=f"{summary}: the page cache holds memory the GPU may need",
                subject="memory",
                evidence=tuple(evidence),
                fix=DROP,
            )
        ]
    return [
        Finding(
            id=GotchaId.G3, status=Status.INFO, summary=summary, subject="memory", evidence=tuple(evidence)
        )
    ]


RULES = (
    Rule(
        Stage.LIVE,
        live,
        "MemAvailable and page cache from /proc/meminfo (unified memory: nvidia-smi's numbers do "
        "not apply), against --need-gb",
    ),
)

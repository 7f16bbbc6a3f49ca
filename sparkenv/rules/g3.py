"""G3 live: unified memory as /proc/meminfo sees it (MemAvailable, page cache), not nvidia-smi.
G3 watch: over a run — MemAvailable falling, with a time-to-exhaustion estimate; the page cache holding
what the GPU needs; memory stalls (PSI)."""

from __future__ import annotations

from functools import partial
from typing import TYPE_CHECKING

from sparkenv.core.report import Finding, GotchaId, Status
from sparkenv.knowledge import gate
from sparkenv.knowledge import watch as limits
from sparkenv.rules import Lazy, Rule, Stage

if TYPE_CHECKING:
    from sparkenv.facts.live import GateFacts
    from sparkenv.facts.timeseries import Series
    from sparkenv.knowledge.records.watch import Watch

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


# --- Stage.WATCH: readings over a run (sparkenv gate --watch, sparkenv watch) -------------------------

EXHAUST = (
    "free memory now (stop other jobs, lower batch or context size); on unified memory the host can wedge "
    "before the OOM killer acts"
)


def watch(s: Series) -> list[Finding]:

    w = limits()
    if s.last is None or not s.memory("mem_available_kb"):
        return [_g3(Status.SKIP, "no /proc/meminfo readings in the record", "memory exhaustion")]
    return [_exhaustion(s.window(w.sampling.window_s), w), _cache(s, w), _pressure(s, w)]


def _g3(status: Status, summary: str, subject: str, fix: str | None = None, *ev: str) -> Finding:
    """The watch rules' findings, fix before evidence (most have a fix, few evidence)."""
    return _finding(status=status, summary=summary, subject=subject, evidence=ev, fix=fix)


def eta_seconds(s: Series, w: Watch) -> tuple[float, float] | None:
    """(seconds to exhaustion, kB/s falling) where MemAvailable falls steadily over the window."""
    from sparkenv.facts.timeseries import trend

    points = s.window(w.memory.trend_s).memory("mem_available_kb")
    if len(points) < 3 or points[-1][0] - points[0][0] < w.memory.min_trend_s:
        return None
    slope = trend(points)
    if slope is None or -slope < w.memory.min_fall_kb_s:
        return None
    return points[-1][1] / -slope, -slope


def _exhaustion(s: Series, w: Watch) -> Finding:
    subject, m = "memory exhaustion", w.memory
    last = s.last
    avail, total = last.mem_available_kb or 0, last.mem_total_kb or 0  # type: ignore[union-attr]
    now = f"MemAvailable {avail / GIB:.1f} GiB of {total / GIB:.1f} GiB"
    eta = eta_seconds(s, w)
    if eta is not None:
        seconds, rate = eta
        text = f"{now}, falling {rate / 1024:.0f} MiB/s: exhausted in ~{seconds:.0f} s at this rate"
        if seconds <= m.eta_fail_s:
            return _g3(Status.FAIL, text, subject, EXHAUST)
        if seconds <= m.eta_warn_s:
            return _g3(Status.WARN, text, subject, EXHAUST)
    if total and avail < m.available_warn_fraction * total:
        return _g3(Status.WARN, f"{now}: under {m.available_warn_fraction:.0%} left", subject, EXHAUST)
    return _g3(Status.PASS, f"{now}, not running out", subject)


def _cache(s: Series, w: Watch) -> Finding:
    last, m = s.last, w.memory
    total, cache, free = last.mem_total_kb, last.page_cache_kb, last.mem_free_kb  # type: ignore[union-attr]
    if not total or cache is None or free is None:
        return _g3(Status.SKIP, "no page cache reading", "page cache")
    text = f"page cache {cache / GIB:.1f} GiB, MemFree {free / GIB:.1f} GiB of {total / GIB:.1f} GiB"
    if cache > m.page_cache_fraction * total and free < m.free_low_fraction * total:
        return _g3(Status.WARN, f"{text}: the cache holds memory the GPU may need", "page cache", DROP)
    return _g3(Status.PASS, text, "page cache")


def _pressure(s: Series, w: Watch) -> Finding:
    last, p = s.last, w.pressure
    some, full = last.psi_some_avg10, last.psi_full_avg10  # type: ignore[union-attr]
    if some is None or full is None:
        return _g3(Status.SKIP, "no /proc/pressure/memory (a kernel without PSI)", "memory pressure")
    text = f"memory stalls (PSI avg10): some {some:g} %, full {full:g} %"
    if full >= p.full_fail:
        why = f"{text}: at systemd-oomd's default limit, where it kills the cgroup"
        return _g3(Status.FAIL, why, "memory pressure", EXHAUST, p.source)
    if some >= p.some_warn:
        return _g3(Status.WARN, f"{text}: the run is waiting on memory", "memory pressure", EXHAUST)
    return _g3(Status.PASS, text, "memory pressure")


RULES = (
    Rule(
        Stage.HOST,
        Lazy("host_system", "g3"),
        "whether earlyoom or systemd-oomd runs (/proc/*/comm), and swap (/proc/meminfo SwapTotal)",
    ),
    Rule(
        Stage.LIVE,
        live,
        "MemAvailable and page cache from /proc/meminfo (unified memory: nvidia-smi's numbers do "
        "not apply), against --need-gb",
    ),
    Rule(
        Stage.WATCH,
        watch,
        "/proc/meminfo every few seconds over the run: MemAvailable's trend and the time to exhaustion, "
        "page cache against MemFree, and /proc/pressure/memory stalls (data/watch.toml)",
    ),
)

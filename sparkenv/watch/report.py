"""`sparkenv watch --report FILE`: what a record shows after the fact — how the run ended (a summary
written, or the record stopping mid-run as after a hard power-off), the last minutes' readings, the
events said during the run, and the G3/G4/G6 judgements over the record's end, by the same rules."""

from __future__ import annotations

import time

from sparkenv import rules
from sparkenv.core.report import Finding, GotchaId, Status
from sparkenv.facts.timeseries import KIB_PER_GIB, Series, clock
from sparkenv.knowledge import watch as limits
from sparkenv.render.text import finding_line
from sparkenv.watch.record import Record


def series(rec: Record) -> Series:
    h = rec.header
    return Series(tuple(rec.samples), gb10=bool(h.get("gb10")), pids_local=bool(h.get("pids_local", True)))


def judge(rec: Record) -> list[Finding]:
    return rules.evaluate(rules.Stage.WATCH, series(rec), (GotchaId.G3, GotchaId.G4, GotchaId.G6))


def render(rec: Record, findings: list[Finding]) -> str:

    h, s = rec.header, series(rec)
    workload = " ".join(h.get("workload") or []) or "?"
    started = _utc(h.get("started"))
    lines = [
        f"sparkenv watch: {rec.path}: pid {h.get('pid')} ({workload}), started {started}, "
        f"{len(s.samples)} readings over {clock(s.duration)}, GPU {h.get('gpu') or 'none read'}"
    ]
    last = s.last
    if rec.summary is not None:
        stop = rec.summary.get("stopped_workload")
        how = f"; the watcher stopped it: {stop}" if stop else ""
        lines.append(f"ended: the workload ended at {clock(rec.summary.get('elapsed_s') or 0)}{how}")
    elif last is not None:
        lines.append(
            f"ended: the record stops at {clock(last.t)} ({_utc(last.wall)}) with no summary: the "
            "watcher was killed or the machine lost power (a hard power-off leaves no kernel log); the "
            "readings before it are below"
        )
    if rec.torn:
        lines.append(f"{rec.torn} line(s) cut short or unreadable were skipped (a write cut by the end)")
    window = limits().sampling.window_s
    lines.append(f"the last {window:.0f} s: {_glance(s.window(window))}")
    if rec.events:
        lines.append("said during the run:")
        lines += [f"  {e['line']}" for e in rec.events if "line" in e]
        lines += [f"  sparkenv watch sent SIGTERM: {e['why']}" for e in rec.events if e.get("action")]
    lines.append("judged over the record's end:")
    lines += [finding_line(f) for f in sorted(findings, key=lambda f: f.sort_key())]
    return "\n".join(lines) + "\n"


def exit_code(findings: list[Finding]) -> int:
    return 1 if any(f.status is Status.FAIL for f in findings) else 0


def _glance(s: Series) -> str:
    parts = []
    for i in s.gpu_indexes():
        p, lim, t, c = (s.gpu(i, k) for k in ("power_w", "power_limit_w", "temperature_c", "sm_clock_mhz"))
        bits = []
        if p:
            bits.append(f"{_span(p)} W" + (f" (limit {lim[-1][1]:g} W)" if lim else ""))
        if t:
            bits.append(f"{t[0][1]:g}→{t[-1][1]:g} °C")
        if c:
            bits.append(f"SM {_span(c)} MHz")
        parts.append(f"gpu{i} " + ", ".join(bits))
    avail = s.memory("mem_available_kb")
    if avail:
        parts.append(f"MemAvailable {avail[0][1] / KIB_PER_GIB:.1f}→{avail[-1][1] / KIB_PER_GIB:.1f} GiB")
    full = s.memory("psi_full_avg10")
    if full:
        parts.append(f"PSI full avg10 up to {max(v for _, v in full):g} %")
    return "; ".join(parts) or "no readings"


def _span(points: list[tuple[float, float]]) -> str:
    lo, hi = min(v for _, v in points), max(v for _, v in points)
    return f"{lo:g}" if lo == hi else f"{lo:g}–{hi:g}"


def _utc(wall: object) -> str:
    if not isinstance(wall, (int, float)):
        return "?"
    return time.strftime("%Y-%m-%d %H:%M:%S UTC", time.gmtime(wall))

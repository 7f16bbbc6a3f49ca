"""A plot of a watched run as one self-contained SVG file (no script, no font, no plotting library):
power with its limit, temperature, SM clock and MemAvailable against time since start, each event a
marked vertical line whose tooltip is its G-line. Opens in any browser; commits as text."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from html import escape
from typing import Any

from sparkenv.facts.timeseries import KIB_PER_GIB, Series, clock

W, PANEL, GAP, LEFT, RIGHT, TOP = 960, 130, 28, 70, 20, 40
COLOURS = ("#1f77b4", "#d62728", "#2ca02c", "#9467bd", "#8c564b", "#e377c2", "#7f7f7f", "#bcbd22")
STATUS = {"FAIL": "#d62728", "ERROR": "#d62728", "WARN": "#ff7f0e"}
MAX_POINTS = 1200


Lines = list[tuple[str, list[tuple[float, float]]]]


@dataclass(frozen=True)
class _Time:
    """The time axis: the run's first and last reading, mapped onto the plot's width."""

    t0: float
    t1: float

    def x(self, t: float) -> float:
        return LEFT + (t - self.t0) / (self.t1 - self.t0) * (W - LEFT - RIGHT)


def render(s: Series, events: Sequence[dict[str, Any]] = (), title: str = "sparkenv watch") -> str:
    panels = _panels(s)
    height = TOP + len(panels) * (PANEL + GAP) + 30
    t0 = s.samples[0].t if s.samples else 0.0
    time = _Time(t0, max(s.samples[-1].t if s.samples else 1.0, t0 + 1.0))
    out = [
        f'<svg xmlns="http://www.w3.org/2000/svg" width="{W}" height="{height}" viewBox="0 0 {W} {height}" '
        'font-family="sans-serif" font-size="11">',
        f'<rect width="{W}" height="{height}" fill="white"/>',
        f'<text x="{LEFT}" y="20" font-size="14" font-weight="bold">{escape(title)}</text>',
        f'<text x="{W - RIGHT}" y="20" text-anchor="end">{len(s.samples)} readings over '
        f"{clock(time.t1 - time.t0)}</text>",
    ]
    for n, (label, lines) in enumerate(panels):
        out += _panel(TOP + n * (PANEL + GAP), label, lines, time)
    bottom = TOP + len(panels) * (PANEL + GAP) - GAP
    for tick in range(5):
        t = time.t0 + (time.t1 - time.t0) * tick / 4
        out.append(f'<text x="{time.x(t):.1f}" y="{bottom + 14}" text-anchor="middle">{clock(t)}</text>')
    out += _events(events, time, bottom)
    out.append("</svg>")
    return "\n".join(out) + "\n"


def _panels(s: Series) -> list[tuple[str, Lines]]:
    gpus = s.gpu_indexes()
    avail = [(t, v / KIB_PER_GIB) for t, v in s.memory("mem_available_kb")]
    power = [(f"gpu{i}", s.gpu(i, "power_w")) for i in gpus]
    return [
        ("power (W)", power + [(f"gpu{i} limit", s.gpu(i, "power_limit_w")) for i in gpus]),
        ("temperature (°C)", [(f"gpu{i}", s.gpu(i, "temperature_c")) for i in gpus]),
        ("SM clock (MHz)", [(f"gpu{i}", s.gpu(i, "sm_clock_mhz")) for i in gpus]),
        ("MemAvailable (GiB)", [("MemAvailable", avail)]),
    ]


def _panel(top: int, label: str, lines: Lines, time: _Time) -> list[str]:
    """One panel's frame, label, value axis and lines (a limit dashed and grey)."""
    plot_w = W - LEFT - RIGHT
    out = [
        f'<rect x="{LEFT}" y="{top}" width="{plot_w}" height="{PANEL}" fill="none" stroke="#999"/>',
        f'<text x="{LEFT + 4}" y="{top - 4}" font-weight="bold">{escape(label)}</text>',
    ]
    values = [v for _, pts in lines for _, v in pts]
    if not values:
        out.append(f'<text x="{LEFT + 10}" y="{top + PANEL / 2}" fill="#777">not read on this machine</text>')
        return out
    lo, hi = min(values), max(values)
    pad = (hi - lo) * 0.08 or max(abs(hi) * 0.05, 1.0)
    lo, hi = lo - pad, hi + pad

    def y(v: float) -> float:
        return top + PANEL - (v - lo) / (hi - lo) * PANEL

    for frac in (0.0, 0.5, 1.0):
        v = lo + (hi - lo) * frac
        out.append(f'<text x="{LEFT - 6}" y="{y(v) + 4:.1f}" text-anchor="end">{v:.4g}</text>')
    for k, (name, pts) in enumerate(lines):
        if not pts:
            continue
        colour = COLOURS[k % len(COLOURS)] if "limit" not in name else "#555"
        dash = ' stroke-dasharray="5,4"' if "limit" in name else ""
        path = " ".join(f"{time.x(t):.1f},{y(v):.1f}" for t, v in _thin(pts))
        out.append(
            f'<polyline fill="none" stroke="{colour}" stroke-width="1.5"{dash} points="{path}">'
            f"<title>{escape(name)}</title></polyline>"
        )
        out.append(
            f'<text x="{W - RIGHT - 4}" y="{top + 12 + 12 * k}" text-anchor="end" fill="{colour}">'
            f"{escape(name)}</text>"
        )
    return out


def _events(events: Sequence[dict[str, Any]], time: _Time, bottom: int) -> list[str]:
    """Each event a dotted vertical line whose tooltip is its G-line (one outside the run on its edge)."""
    out = []
    for e in events:
        t = e.get("t")
        if not isinstance(t, (int, float)):
            continue
        colour = STATUS.get(str(e.get("status")), "#ff7f0e")
        xe = time.x(min(max(float(t), time.t0), time.t1))
        out.append(
            f"<g><title>{escape(str(e.get('line', '')))}</title>"
            f'<line x1="{xe:.1f}" y1="{TOP - 6}" x2="{xe:.1f}" y2="{bottom}" stroke="{colour}" '
            'stroke-width="1.5" stroke-dasharray="2,3"/>'
            f'<text x="{xe + 3:.1f}" y="{TOP - 8}" fill="{colour}" font-weight="bold">'
            f"{escape(str(e.get('id', '')))}</text></g>"
        )
    return out


def _thin(points: list[tuple[float, float]]) -> list[tuple[float, float]]:
    if len(points) <= MAX_POINTS:
        return points
    step = len(points) / MAX_POINTS
    return [points[int(i * step)] for i in range(MAX_POINTS)] + [points[-1]]

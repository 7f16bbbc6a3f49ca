"""A plot of a watched run as one self-contained SVG file (no script, no font, no plotting library): power
with its limit, temperature, SM clock and MemAvailable against time since start, each event a marked
vertical line whose tooltip is its G-line. Opens in any browser; commits as text.

Laid out by estimated text extents, so no label meets another (event marks at one time stack). Every value
axis starts at 0 and ends on a round number above the highest value (MemAvailable's at the machine's total
memory), so a small wobble over a large pool looks like one; ticks fall on round numbers.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from html import escape
from typing import Any

from sparkenv.facts.timeseries import KIB_PER_GIB, Series, clock

W, PANEL, LEFT, RIGHT = 960, 130, 64, 28
FONT, TITLE_FONT = 11, 14
ROW = 14  # one line of 11 px text and its leading
COLOURS = ("#1f77b4", "#d62728", "#2ca02c", "#9467bd", "#8c564b", "#e377c2", "#7f7f7f", "#bcbd22")
LIMIT_COLOUR = "#555"
STATUS = {"FAIL": "#d62728", "ERROR": "#d62728", "WARN": "#ff7f0e"}
MAX_POINTS = 1200
EVENT_ROWS = 4  # event marks stacked at most this deep; a deeper one keeps its line and tooltip
HEADROOM = 0.05  # the highest value stays at least this share of the axis below its top
Y_TICKS, X_TICK_PX = 5, 110  # about this many value ticks; a time tick at most every this many pixels
STEPS = (1.0, 2.0, 2.5, 5.0, 10.0)
TIME_STEPS = (1, 2, 5, 10, 15, 20, 30, 60, 120, 300, 600, 900, 1200, 1800, 3600, 7200, 10800, 21600, 43200)


def text_width(text: str, size: float = FONT, bold: bool = False) -> float:
    """A generous estimate of a text's advance in a sans-serif font (digits and capitals are the widest
    glyphs, about 0.64 em): the layout keeps estimated boxes apart, so real ones do not meet."""
    return len(text) * size * (0.7 if bold else 0.64)


Lines = list[tuple[str, list[tuple[float, float]]]]


@dataclass(frozen=True)
class _Panel:
    label: str
    lines: Lines
    floor_top: float = 0.0  # the axis reaches at least this (MemAvailable: the total memory)


@dataclass(frozen=True)
class _Time:
    """The time axis: the run's first and last reading, mapped onto the plot's width."""

    t0: float
    t1: float

    def x(self, t: float) -> float:
        return LEFT + (t - self.t0) / (self.t1 - self.t0) * (W - LEFT - RIGHT)


def render(s: Series, events: Sequence[dict[str, Any]] = (), title: str = "sparkenv watch") -> str:
    panels = _panels(s)
    t0 = min(s.samples[0].t, 0.0) if s.samples else 0.0  # from the watcher's start: +0:00 on the axis
    time = _Time(t0, max(s.samples[-1].t if s.samples else 1.0, t0 + 1.0))
    head = [
        f'<text x="{LEFT}" y="20" font-size="{TITLE_FONT}" font-weight="bold">'
        f"{escape(_fit(title, W - LEFT - RIGHT, TITLE_FONT, bold=True))}</text>",
        f'<text x="{LEFT}" y="38">{len(s.samples)} readings over {clock(time.t1 - time.t0)}</text>',
    ]
    band_top = 46
    marks, rows = _event_marks(events, time, band_top)
    y = band_top + rows * ROW + 6
    body: list[str] = []
    for panel in panels:
        part, y = _panel(y, panel, time)
        body += part
    bottom = y
    body += _time_axis(time, bottom)
    height = bottom + ROW + 12
    lines = [_event_line(e, time, band_top + rows * ROW + 2, bottom) for e in events]
    out = [
        f'<svg xmlns="http://www.w3.org/2000/svg" width="{W}" height="{height}" viewBox="0 0 {W} {height}" '
        f'font-family="sans-serif" font-size="{FONT}">',
        f'<rect width="{W}" height="{height}" fill="white"/>',
        *head,
        *body,
        *[ln for ln in lines if ln],
        *marks,
        "</svg>",
    ]
    return "\n".join(out) + "\n"


def _panels(s: Series) -> list[_Panel]:
    gpus = s.gpu_indexes()
    avail = [(t, v / KIB_PER_GIB) for t, v in s.memory("mem_available_kb")]
    total = [v / KIB_PER_GIB for _, v in s.memory("mem_total_kb")]
    power = [(f"gpu{i}", s.gpu(i, "power_w")) for i in gpus]
    return [
        _Panel("power (W)", power + [(f"gpu{i} limit", s.gpu(i, "power_limit_w")) for i in gpus]),
        _Panel("temperature (°C)", [(f"gpu{i}", s.gpu(i, "temperature_c")) for i in gpus]),
        _Panel("SM clock (MHz)", [(f"gpu{i}", s.gpu(i, "sm_clock_mhz")) for i in gpus]),
        _Panel("MemAvailable (GiB)", [("MemAvailable", avail)], max(total, default=0.0)),
    ]


def nice_axis(low: float, high: float, ticks: int = Y_TICKS) -> tuple[float, float, float]:
    """(bottom, top, step) of a value axis holding `low` … `high`: from 0 (or a round number below a
    negative `low`), a step of 1, 2, 2.5 or 5 times a power of ten, about `ticks` of them, the top a whole
    number of steps with HEADROOM of the span above `high`."""
    low = min(low, 0.0)
    span = max(high - low, 0.0) * (1 + HEADROOM)
    if span <= 0:
        return low, low + 1.0, 0.25
    raw = span / ticks
    power = 10 ** math.floor(math.log10(raw))
    step = next(m * power for m in STEPS if m * power >= raw * (1 - 1e-9))
    bottom = math.floor(low / step + 1e-9) * step
    return bottom, bottom + math.ceil((low + span - bottom) / step - 1e-9) * step, step


def tick_label(value: float, step: float) -> str:
    """A tick's value with as many decimals as its step needs (2.5 → one; 0.25 → two)."""
    decimals = 0
    while decimals < 6 and abs(round(step, decimals) - step) > 1e-9 * max(1.0, step):
        decimals += 1
    return f"{value:.{decimals}f}"


def _panel(y: float, panel: _Panel, time: _Time) -> tuple[list[str], float]:
    """One panel: its name and legend above it, its frame, grid, value axis and lines; the y below it."""
    plot_w = W - LEFT - RIGHT
    named = [(name, pts) for name, pts in panel.lines if pts]
    head_rows, legend = _legend(panel.label, named, y)
    top = y + head_rows * ROW + 4
    out = [f'<text x="{LEFT}" y="{y + ROW - 3}" font-weight="bold">{escape(panel.label)}</text>', *legend]
    values = [v for _, pts in named for _, v in pts]
    if not values:
        out.append(
            f'<rect x="{LEFT}" y="{top}" width="{plot_w}" height="{PANEL}" fill="none" stroke="#999"/>'
        )
        out.append(f'<text x="{LEFT + 10}" y="{top + PANEL / 2}" fill="#777">not read on this machine</text>')
        return out, top + PANEL + 10
    lo, hi, step = nice_axis(min(values), max(max(values), panel.floor_top))

    def yv(v: float) -> float:
        return top + PANEL - (v - lo) / (hi - lo) * PANEL

    for k in range(round((hi - lo) / step) + 1):
        v = lo + k * step
        out.append(f'<line x1="{LEFT}" y1="{yv(v):.1f}" x2="{W - RIGHT}" y2="{yv(v):.1f}" stroke="#e4e4e4"/>')
        out.append(
            f'<text class="ytick" x="{LEFT - 6}" y="{yv(v) + 4:.1f}" text-anchor="end">'
            f"{tick_label(v, step)}</text>"
        )
    out.append(f'<rect x="{LEFT}" y="{top}" width="{plot_w}" height="{PANEL}" fill="none" stroke="#999"/>')
    for k, (name, pts) in enumerate(named):
        colour, dash = _style(k, name)
        path = " ".join(f"{time.x(t):.1f},{yv(v):.1f}" for t, v in _thin(pts))
        out.append(
            f'<polyline fill="none" stroke="{colour}" stroke-width="1.5"{dash} points="{path}">'
            f"<title>{escape(name)}</title></polyline>"
        )
    return out, top + PANEL + 10


def _style(k: int, name: str) -> tuple[str, str]:
    if "limit" in name:
        return LIMIT_COLOUR, ' stroke-dasharray="5,4"'
    return COLOURS[k % len(COLOURS)], ""


def _legend(label: str, named: Lines, y: float) -> tuple[int, list[str]]:
    """Each line's name beside a short stroke of its colour, right-aligned on the panel's name row and
    wrapped onto rows below it when they do not fit beside the name; how many rows the head takes."""
    items = [(name, *_style(k, name)) for k, (name, _) in enumerate(named)]
    rows: list[list[tuple[str, str, str]]] = [[]]
    room = [W - RIGHT - (LEFT + text_width(label, bold=True) + 16)]
    for item in reversed(items):  # filled from the right edge
        need = text_width(item[0]) + 30
        if rows[-1] and need > room[-1]:
            rows.append([])
            room.append(W - RIGHT - LEFT)
        rows[-1].append(item)
        room[-1] -= need
    out = []
    for r, row in enumerate(rows):
        x = W - RIGHT
        base = y + (r + 1) * ROW - 3
        for name, colour, dash in row:
            x -= text_width(name)
            out.append(f'<text x="{x:.1f}" y="{base}" fill="{colour}">{escape(name)}</text>')
            out.append(
                f'<line x1="{x - 22:.1f}" y1="{base - 4}" x2="{x - 4:.1f}" y2="{base - 4}" stroke="{colour}" '
                f'stroke-width="1.5"{dash}/>'
            )
            x -= 30
    return len(rows), out


def _time_axis(time: _Time, bottom: float) -> list[str]:
    """Ticks at round times (every 1, 2, 5 … s, 1, 2, 5 … min, 1 … h), each label inside the picture."""
    px_per_s = (W - LEFT - RIGHT) / (time.t1 - time.t0)
    step = next((s for s in TIME_STEPS if s * px_per_s >= X_TICK_PX), TIME_STEPS[-1])
    while (time.t1 - time.t0) / step > 40:
        step *= 2
    out = []
    t = math.ceil(time.t0 / step - 1e-9) * step
    while t <= time.t1 + 1e-9:
        text = clock(t)
        half = text_width(text) / 2
        x = min(max(time.x(t), half + 2), W - 2 - half)
        out.append(f'<line x1="{time.x(t):.1f}" y1="{bottom - 10}" x2="{time.x(t):.1f}" y2="{bottom - 6}" '
                   'stroke="#999"/>')  # fmt: skip
        out.append(f'<text class="xtick" x="{x:.1f}" y="{bottom + 6}" text-anchor="middle">{text}</text>')
        t += step
    return out


def _event_marks(events: Sequence[dict[str, Any]], time: _Time, band_top: float) -> tuple[list[str], int]:
    """Each event's name above the panels at its time; one that would meet another's goes on the row
    above it (G4 and G6 said at the same second stack). How many rows were used."""
    ends: list[float] = []  # the right edge of the last mark on each row; row 0 is nearest the panels
    placed: list[tuple[dict[str, Any], float, float, int]] = []
    for e in sorted((e for e in events if _when(e) is not None), key=lambda e: _when(e) or 0.0):
        name = str(e.get("id", ""))
        x = time.x(min(max(_when(e) or 0.0, time.t0), time.t1))
        if any(abs(px - x) < 1 and str(p.get("id", "")) == name for p, px, _, _ in placed):
            continue  # the same check said again at the same time (another subject): one mark, two lines
        w = text_width(name, bold=True)
        left = min(x + 3, W - 2 - w)
        row = next((r for r, end in enumerate(ends) if left >= end + 4), len(ends))
        if row >= EVENT_ROWS:
            continue
        if row == len(ends):
            ends.append(0.0)
        ends[row] = left + w
        placed.append((e, x, left, row))
    rows = len(ends)
    out = []
    for e, _, left, row in placed:
        colour = STATUS.get(str(e.get("status")), "#ff7f0e")
        out.append(
            f"<g><title>{escape(str(e.get('line', '')))}</title>"
            f'<text class="event" x="{left:.1f}" y="{band_top + (rows - row) * ROW - 3}" fill="{colour}" '
            f'font-weight="bold">{escape(str(e.get("id", "")))}</text></g>'
        )
    return out, rows


def _event_line(e: dict[str, Any], time: _Time, top: float, bottom: float) -> str:
    """A dotted vertical line at the event's time whose tooltip is its G-line (one outside the run on
    its edge)."""
    t = _when(e)
    if t is None:
        return ""
    colour = STATUS.get(str(e.get("status")), "#ff7f0e")
    x = time.x(min(max(t, time.t0), time.t1))
    return (
        f"<g><title>{escape(str(e.get('line', '')))}</title>"
        f'<line x1="{x:.1f}" y1="{top}" x2="{x:.1f}" y2="{bottom - 10}" stroke="{colour}" '
        'stroke-width="1.5" stroke-dasharray="2,3"/></g>'
    )


def _when(e: dict[str, Any]) -> float | None:
    t = e.get("t")
    return float(t) if isinstance(t, (int, float)) and math.isfinite(t) else None


def _fit(text: str, width: float, size: float, bold: bool = False) -> str:
    """The text, cut with an ellipsis to fit `width` by its estimated extent."""
    if text_width(text, size, bold) <= width:
        return text
    keep = max(1, int(width / text_width("x", size, bold)) - 1)
    return text[:keep] + "…"


def _thin(points: list[tuple[float, float]]) -> list[tuple[float, float]]:
    if len(points) <= MAX_POINTS:
        return points
    step = len(points) / MAX_POINTS
    return [points[int(i * step)] for i in range(MAX_POINTS)] + [points[-1]]

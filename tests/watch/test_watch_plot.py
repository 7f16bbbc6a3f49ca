"""The watch plot's layout, read back from the SVG `sparkenv watch --report --plot` writes: no text meets
another (boxes estimated from the characters, independently of the plot's own estimate), every text lies
inside the picture, ticks are round numbers, every value axis is padded above its highest value, and a
wobble that is small against the whole (MemAvailable's 0.9 GiB of 126 GiB on the real H200 run) looks
small. The records are the real H200 run's (tests/fixtures/watch/) and that run with more events said at
once, as a watcher writes them."""

from __future__ import annotations

import itertools
import json
import math
import re
from pathlib import Path
from xml.etree import ElementTree

import pytest
from conftest import sparkenv

FIXTURE = Path(__file__).parents[1] / "fixtures" / "watch" / "h200-matmul-cotenant.jsonl"
NS = "{http://www.w3.org/2000/svg}"
EM = 0.6  # a sans-serif font's average advance per character, in em (bold: 0.65)


def _busy_record(tmp_path: Path) -> Path:
    """The H200 run with five more events: three at the second G4 and G6 were said, two a second
    later, and a workload whose command line is longer than the plot is wide."""
    lines = FIXTURE.read_text().splitlines()
    header = json.loads(lines[0])
    header["workload"] = [
        "/opt/torch/.venv/bin/python3",
        "-m",
        "torch.distributed.run",
        *["--arg=value"] * 20,
    ]
    extra = [
        {"event": {"t": t, "id": gid, "status": status, "subject": f"s{n}", "line": f"{gid} {status}: n{n}"}}
        for n, (t, gid, status) in enumerate(
            [(24.16, "G3", "FAIL"), (24.16, "G4", "WARN"), (24.5, "G3", "WARN"), (25.1, "G6", "WARN"),
             (69.0, "G4", "FAIL")]
        )
    ]  # fmt: skip
    path = tmp_path / "busy.jsonl"
    path.write_text(
        "\n".join([json.dumps(header), *lines[1:28], *map(json.dumps, extra), *lines[28:]]) + "\n"
    )
    return path


@pytest.fixture(params=["h200", "busy"])
def svg(request, tmp_path) -> ElementTree.Element:
    record = FIXTURE if request.param == "h200" else _busy_record(tmp_path)
    plot = tmp_path / "plot.svg"
    r = sparkenv("watch", "--report", str(record), "--plot", str(plot))
    assert r.code == 0, r.err
    return ElementTree.parse(plot).getroot()


def _boxes(svg: ElementTree.Element) -> list[tuple[str, float, float, float, float]]:
    """(text, left, top, right, bottom) of every <text>, from its anchor, size and weight."""
    base = float(svg.get("font-size", "16"))
    found = []
    for t in svg.iter(f"{NS}text"):
        text = "".join(t.itertext())
        size = float(t.get("font-size", base))
        width = len(text) * size * (0.65 if t.get("font-weight") == "bold" else EM)
        x, y = float(t.get("x", 0)), float(t.get("y", 0))
        left = {"middle": x - width / 2, "end": x - width}.get(t.get("text-anchor", "start"), x)
        found.append((text, left, y - 0.75 * size, left + width, y + 0.2 * size))
    return found


def test_no_text_meets_another_and_all_of_it_is_inside_the_picture(svg):
    _, _, vw, vh = map(float, svg.get("viewBox", "").split())
    boxes = _boxes(svg)
    assert len(boxes) > 20
    for text, left, top, right, bottom in boxes:
        assert left >= 0 and right <= vw and top >= 0 and bottom <= vh, f"{text!r} leaves the picture"
    met = [
        (a[0], b[0])
        for i, a in enumerate(boxes)
        for b in boxes[i + 1 :]
        if min(a[3], b[3]) - max(a[1], b[1]) > 0.5 and min(a[4], b[4]) - max(a[2], b[2]) > 0.5
    ]
    assert not met, f"texts that meet: {met}"


def _round(step: float) -> bool:
    mantissa = step / 10 ** math.floor(math.log10(step))
    return any(math.isclose(mantissa, m, rel_tol=1e-6) for m in (1, 2, 2.5, 5, 10))


def _seconds(label: str) -> int:
    parts = [int(p) for p in label.lstrip("+").split(":")]
    return sum(p * 60**k for k, p in enumerate(reversed(parts)))


def test_ticks_are_round_numbers(svg):
    panels = _panels(svg)
    assert len(panels) == 4
    for frame, ticks, _ in panels:
        values = [float(t) for t in ticks]
        assert len(values) >= 3, f"a panel at y={frame[1]} has ticks {ticks}"
        steps = {round(b - a, 9) for a, b in itertools.pairwise(values)}
        assert len(steps) == 1 and _round(steps.pop()) and values[0] == 0, ticks
    times = [_seconds("".join(t.itertext())) for t in svg.iter(f"{NS}text") if t.get("class") == "xtick"]
    gaps = {b - a for a, b in itertools.pairwise(times)}
    assert len(times) >= 4 and len(gaps) == 1, times
    assert gaps.pop() in (1, 2, 5, 10, 15, 20, 30, 60, 120, 300, 600, 900, 1200, 1800, 3600)
    assert all(t % (times[1] - times[0]) == 0 for t in times), times


def _panels(svg: ElementTree.Element) -> list[tuple[tuple[float, float, float, float], list[str], list]]:
    """Each panel's frame (x, y, width, height), its value tick labels and its polylines, in order."""
    panels: list = []
    ticks: list[str] = []
    for el in svg.iter():
        if el.tag == f"{NS}text" and el.get("class") == "ytick":
            ticks.append("".join(el.itertext()))
        elif el.tag == f"{NS}rect" and el.get("stroke"):
            frame = tuple(float(el.get(k, 0)) for k in ("x", "y", "width", "height"))
            panels.append((frame, ticks, []))
            ticks = []
        elif el.tag == f"{NS}polyline":
            panels[-1][2].append(el)
    return panels


def test_value_axes_are_padded_and_a_small_wobble_looks_small(svg):
    spans = {}
    for (_x, top, _w, height), _ticks, lines in _panels(svg):
        for line in lines:
            ys = [float(p.split(",")[1]) for p in line.get("points", "").split()]
            name = "".join(line.itertext())
            # the highest value sits below the top by at least 3 % of the panel; nothing below the axis
            assert min(ys) >= top + 0.03 * height and max(ys) <= top + height + 0.01, name
            spans[name] = (max(ys) - min(ys)) / height
    # MemAvailable moved 0.9 GiB (125.2 → 124.3) of the machine's 125.8 GiB: under a twentieth of the
    # panel, not its whole height
    assert spans["MemAvailable"] < 0.05, spans
    # while the power, which rose from 80 W to the 700 W cap, still fills most of its panel
    assert spans["gpu0"] > 0.5, spans


def test_events_said_at_the_same_time_are_stacked_not_overprinted(svg):
    marks = [
        (float(t.get("x", 0)), float(t.get("y", 0)), "".join(t.itertext()))
        for t in svg.iter(f"{NS}text")
        if t.get("class") == "event"
    ]
    names = {m[2] for m in marks}
    assert {"G4", "G6"} <= names, marks
    at_24 = [m for m in marks if abs(m[0] - min(x for x, _, _ in marks)) < 30]
    assert len({y for _, y, _ in at_24}) == len(at_24), f"marks on one row at the same time: {at_24}"
    assert re.fullmatch(r"G(10|[1-9])", marks[0][2])

"""`sparkenv attest --html FILE`: the attest report as one self-contained HTML page (inline CSS and SVG, no
script, nothing fetched). Presentation only: the findings are the report's, the shares are
rules/attest_kernels.py's `families` and `libraries` (the ones G7's table is made of), the kernels' family
its `family`; every string from a record or a finding is escaped."""

from __future__ import annotations

from html import escape
from typing import TYPE_CHECKING

from sparkenv.core.printable import printable
from sparkenv.core.report import Report, Status
from sparkenv.rules.attest_kernels import OTHER, Share, families, family, libraries, library, ms, percent

if TYPE_CHECKING:
    from sparkenv.facts.attest import AttestFacts

TOP_KERNELS = 20
LABEL_W = 330  # the bar charts' label column, in SVG pixels
BAR_W = 420  # a 100 % bar
ROW_H = 22
LABEL_CHARS = 40

_CSS = """
body{font:14px/1.4 system-ui,-apple-system,"Segoe UI",sans-serif;margin:24px auto;max-width:1100px;
padding:0 16px;color:#1d1d1f;background:#fff}
h1{font-size:20px;margin:0 0 4px}h2{font-size:16px;margin:24px 0 8px;border-bottom:1px solid #ddd}
.meta{color:#555}.verdict{display:inline-block;padding:2px 10px;border-radius:4px;font-weight:600;color:#fff}
.v-ready{background:#2e7d32}.v-blocked{background:#c62828}.v-ready-with-warnings{background:#ef6c00}
.partial{background:#fff3e0;border:1px solid #ef6c00;padding:8px 12px;
border-radius:4px;margin:12px 0}
table{border-collapse:collapse;width:100%}th,td{text-align:left;vertical-align:top;padding:4px 8px;
border-bottom:1px solid #eee}th{background:#f5f5f5;font-weight:600;white-space:nowrap}td.num{text-align:right;
white-space:nowrap}td.name{font-family:ui-monospace,Menlo,monospace;font-size:12px;overflow-wrap:anywhere;
word-break:break-all}
.st{font-weight:600;white-space:nowrap}.s-PASS{color:#2e7d32}.s-FAIL,.s-ERROR{color:#c62828}
.s-WARN{color:#ef6c00}.s-INFO{color:#1565c0}.s-SKIP{color:#757575}
td.fix{color:#555;min-width:16em}.nw{white-space:nowrap}
svg text{font:12px system-ui,sans-serif;fill:#1d1d1f}svg .track{fill:#eee}svg .bar{fill:#1565c0}
"""


def render(report: Report, facts: AttestFacts) -> str:
    rows = facts.kernels
    shares = families(rows, facts.defined_in)
    total = sum(r.gpu_ns for r in rows)
    verdict = report.verdict.value
    parts = [
        "<!DOCTYPE html>",
        '<html lang="en"><head><meta charset="utf-8">',
        f"<title>sparkenv attest: {_e(report.target)}</title>",
        f"<style>{_CSS}</style></head><body>",
        "<h1>sparkenv attest</h1>",
        f'<p class="meta">{_e(report.target)}</p>',
        f'<p>verdict: <span class="verdict v-{_e(verdict)}">{_e(verdict)}</span> {_e(_counts(report))}</p>',
        *_partial(facts),
        "<h2>Findings</h2>",
        *_findings(report),
        "<h2>GPU time per backend family</h2>",
        _chart("GPU time per backend family", shares, total),
        "<h2>GPU time per library</h2>",
        _chart("GPU time per library", libraries(rows, facts.defined_in), total),
        f"<h2>Top kernels by GPU time (of {_e(ms(total))})</h2>",
        _kernels(facts, total),
        "<h2>CUDA JIT cache</h2>",
        _jit(facts),
        "</body></html>",
    ]
    return "\n".join(parts) + "\n"


def _e(text: object) -> str:
    """Escaped for HTML text and attribute values; control characters shown, not passed on."""
    return escape(printable(str(text)) or "", quote=True)


def _counts(report: Report) -> str:
    found = [f"{report.count(s)} {s.value}" for s in Status if report.count(s)]
    return f"({', '.join(found)})" if found else ""


def _partial(facts: AttestFacts) -> list[str]:
    cut = [r for r in facts.records if not r.finished]
    if not facts.records:
        return ['<p class="meta">no record: no process loaded torch with the probe</p>']
    if not cut:
        return ['<p class="meta">record: complete (every window ended)</p>']
    which = ", ".join(f"pid {r.pid} (last seen at +{r.window_s or 0:.1f} s)" for r in cut)
    return [
        f'<p class="partial"><strong>partial record</strong>: the window did not end in {_e(which)}; '
        "what follows holds what was recorded until then</p>"
    ]


def _findings(report: Report) -> list[str]:
    out = ["<table><tr><th>G</th><th>status</th><th>finding</th><th>fix</th></tr>"]
    for f in report.sorted_findings():
        out.append(
            f'<tr class="finding"><td>{_e(f.id)}</td>'
            f'<td class="st s-{_e(f.status.value)}">{_e(f.status.value)}</td>'
            f'<td>{_e(" ".join(f.summary.split()))}</td><td class="fix">{_e(f.fix or "")}</td></tr>'
        )
    out.append("</table>")
    return out


def _chart(title: str, shares: list[Share], total: int) -> str:
    if not shares or not total:
        return '<p class="meta">no GPU kernel was recorded</p>'
    height = ROW_H * len(shares) + 4
    width = LABEL_W + BAR_W + 90
    out = [
        f'<svg width="{width}" height="{height}" '
        f'viewBox="0 0 {width} {height}" role="img" aria-label="{_e(title)}">'
    ]
    for i, s in enumerate(shares):
        y = 2 + i * ROW_H
        label = s.name if s.name == s.library else f"{s.name} ({s.library})"
        if s.how:
            label += f" [{s.how}]"
        if len(label) > LABEL_CHARS:
            label = label[: LABEL_CHARS - 1] + "…"
        out.append(
            f"<g><title>{_e(s.name)}: {_e(percent(s.gpu_ns, total))}, {_e(ms(s.gpu_ns))}</title>"
            f'<text x="{LABEL_W - 8}" y="{y + 15}" text-anchor="end">{_e(label)}</text>'
            f'<rect class="track" x="{LABEL_W}" y="{y + 3}" width="{BAR_W}" height="{ROW_H - 6}"/>'
            f'<rect class="bar" data-family="{_e(s.name)}" x="{LABEL_W}" y="{y + 3}" '
            f'width="{s.of(total) * BAR_W:.2f}" height="{ROW_H - 6}"/>'
            f'<text x="{LABEL_W + BAR_W + 6}" y="{y + 15}">{_e(percent(s.gpu_ns, total))}</text></g>'
        )
    out.append("</svg>")
    return "".join(out)


def _kernels(facts: AttestFacts, total: int) -> str:
    merged: dict[str, list[int]] = {}  # a name recorded under several operators or devices, once
    for r in facts.kernels:
        got = merged.setdefault(r.name, [0, 0])
        got[0] += r.count
        got[1] += r.gpu_ns
    if not merged:
        return '<p class="meta">no GPU kernel was recorded</p>'
    top = sorted(merged.items(), key=lambda kv: (-kv[1][1], kv[0]))[:TOP_KERNELS]
    out = [
        f'<p class="meta">{min(TOP_KERNELS, len(merged))} of {len(merged)} kernel name(s)</p>',
        "<table><tr><th>kernel</th><th>family</th><th>library (attributed by)</th><th>launches</th>"
        "<th>GPU time</th><th>share</th></tr>",
    ]
    for name, (count, ns) in top:
        fam = family(name, facts.defined_in.get(name, ()))
        lib, how = library(name, facts.defined_in)
        out.append(
            f'<tr><td class="name">{_e(name)}</td><td class="nw">{_e(fam.name if fam else OTHER)}</td>'
            f"<td>{_e(lib)} ({_e(how)})</td>"
            f'<td class="num">{count:,}</td><td class="num">{_e(ms(ns))}</td>'
            f'<td class="num">{_e(percent(ns, total))}</td></tr>'
        )
    out.append("</table>")
    return "\n".join(out)


def _jit(facts: AttestFacts) -> str:
    seen = []
    if facts.jit_folder is not None:
        seen.append(("the workload's private cache", facts.jit_folder, facts.jit_files, facts.jit_bytes))
    seen += [
        (f"pid {r.pid}'s record", r.jit_folder, r.jit_files, r.jit_bytes)
        for r in facts.records
        if r.jit_folder or r.jit_files is not None
    ]
    if not seen:
        return '<p class="meta">no private CUDA JIT cache was observed</p>'
    out = ["<table><tr><th>seen by</th><th>folder</th><th>files</th><th>size</th></tr>"]
    for who, folder, files, size in seen:
        out.append(
            f'<tr><td>{_e(who)}</td><td class="name">{_e(folder or "not recorded")}</td>'
            f'<td class="num">{"" if files is None else f"{files:,}"}</td>'
            f'<td class="num">{"" if size is None else _e(f"{size / 1024:,.1f} KiB")}</td></tr>'
        )
    out.append("</table>")
    if any(files for _, _, files, _ in seen):
        out.append('<p class="meta">files the driver wrote there compiling PTX during the window</p>')
    return "\n".join(out)

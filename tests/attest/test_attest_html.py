"""`sparkenv attest --html FILE`: the report of a recorded window as one self-contained HTML page. Read
back with html.parser: every finding line is there, the bar charts' bars are the JSON report's shares,
strings from the record are escaped, nothing is fetched or run, a cut record says partial, and a bad path
is one line and exit 2 before any work."""

from __future__ import annotations

import json
import re
from html import escape
from html.parser import HTMLParser
from pathlib import Path

import attest_helpers as ah
import pytest


class Page(HTMLParser):
    """What a browser would build from the page: its tags, its text, the findings table's rows, the bar
    charts' rectangles; a tag closed out of order fails the test."""

    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.tags: list[str] = []
        self.text: list[str] = []
        self.charts: list[list[dict[str, str]]] = []
        self.findings: list[list[str]] = []  # each finding row's cells: G, status, text, fix
        self.open: list[str] = []
        self.row: list[str] | None = None

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        self.tags.append(tag)
        if tag == "svg":
            self.charts.append([])
        if tag == "rect":
            self.charts[-1].append({k: v or "" for k, v in attrs})
        if tag == "tr" and ("class", "finding") in attrs:
            self.row = []
        if tag == "td" and self.row is not None:
            self.row.append("")
        if tag not in ("meta", "rect", "br"):
            self.open.append(tag)

    def handle_startendtag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        self.handle_starttag(tag, attrs)  # <rect .../>: nothing left open

    def handle_endtag(self, tag: str) -> None:
        assert self.open and self.open[-1] == tag, f"</{tag}> closes <{self.open[-1:]}>"
        self.open.pop()
        if tag == "tr" and self.row is not None:
            self.findings.append(self.row)
            self.row = None

    def handle_data(self, data: str) -> None:
        if self.open[-1:] != ["style"]:
            self.text.append(data)
        if self.row is not None and "td" in self.open:
            self.row[-1] += data


def _page(path: Path) -> tuple[str, Page]:
    raw = path.read_text(encoding="utf-8")
    page = Page()
    page.feed(raw)
    page.close()
    assert page.open == [], page.open
    return raw, page


def _bars(chart: list[dict[str, str]]) -> dict[str, float]:
    """Each bar's share in percent: its width over its track's (a 100 % bar)."""
    tracks = [float(r["width"]) for r in chart if r["class"] == "track"]
    bars = [r for r in chart if r["class"] == "bar"]
    assert len(tracks) == len(bars) and len(set(tracks)) == 1
    return {r["data-family"]: 100.0 * float(r["width"]) / tracks[0] for r in bars}


def _attest(run, record: Path, tmp_path: Path, *args: str):
    html, report = tmp_path / "attest.html", tmp_path / "attest.json"
    r = run("attest", "--record", str(record), "--html", str(html), "--report", str(report), *args)
    return r, html, json.loads(report.read_text())


def test_the_page_holds_the_verdict_and_every_finding_line(run, tmp_path):
    r, html, data = _attest(run, ah.fixture("train.jsonl"), tmp_path)
    assert r.code == 0, r.err
    raw, page = _page(html)
    assert page.tags[:2] == ["html", "head"] and raw.startswith("<!DOCTYPE html>")
    text = "".join(page.text)
    lines = [ln for ln in r.out.splitlines() if re.match(r"^G(10|[1-9]) ", ln)]
    assert len(lines) == len(data["findings"]) == len(page.findings) == 11
    # each text line is a row: G-number, status, text, and the fix the line carries (FAIL and WARN)
    for line, (g, status, summary, fix) in zip(lines, page.findings, strict=True):
        assert line in (f"{g} {status}: {summary}", f"{g} {status}: {summary}; {fix}"), line
    assert sorted(page.findings) == sorted(
        [f["id"], f["status"], f["summary"], f["fix"] or ""] for f in data["findings"]
    )
    assert f"verdict: {data['verdict']}" in text
    assert "record: complete" in text and "partial record" not in text
    # the JIT cache the record saw: its folder, its 6 files
    assert "/tmp/tmp.GfXwT67sM5" in text and "841.4 KiB" in text


def test_the_bars_are_the_reports_shares(run, tmp_path):
    r, html, data = _attest(run, ah.fixture("train.jsonl"), tmp_path)
    assert r.code == 0, r.err
    _, page = _page(html)
    assert page.tags.count("svg") == 2 == len(page.charts)
    by_family, by_library = (_bars(c) for c in page.charts)
    reported = {}
    for f in data["findings"]:
        if f["subject"].startswith("family "):
            got = re.match(r".+?: (\d+\.\d) % of GPU time", f["summary"])
            assert got, f["summary"]
            reported[f["subject"].removeprefix("family ")] = float(got.group(1))
    assert set(by_family) == set(reported) and len(reported) == 6
    for name, share in reported.items():
        assert by_family[name] == pytest.approx(share, abs=0.051), name
    table = next(f["summary"] for f in data["findings"] if f["subject"] == "GPU time")
    libraries = dict(
        (m.group(1), float(m.group(2)))
        for m in re.finditer(r"(?:^|, )([^,]+?) (\d+\.\d) %", table.split("by library: ")[1])
    )
    assert set(by_library) == set(libraries) and "cuDNN" in libraries
    for name, share in libraries.items():
        assert by_library[name] == pytest.approx(share, abs=0.051), name
    # largest first, as the report lists them
    assert list(by_family.values()) == sorted(by_family.values(), reverse=True)


def test_kernel_names_are_escaped_and_nothing_is_fetched_or_run(run, tmp_path):
    """A kernel name carrying markup (templates have <, > and &; this one a script tag) is text."""
    rows = [json.loads(ln) for ln in ah.fixture("train.jsonl").read_text().splitlines()]
    biggest = max((r for r in rows if r["kind"] == "kernel"), key=lambda r: r["gpu_ns"])
    evil = "void k<T><script>alert(1)</script>&amp;<img src=http://x/y.png>"
    biggest["name"] = evil
    record = tmp_path / "attest-1.jsonl"
    record.write_text("".join(json.dumps(r) + "\n" for r in rows))
    r, html, _ = _attest(run, record, tmp_path)
    assert r.code == 0, r.err
    raw, page = _page(html)
    assert evil in "".join(page.text)
    assert "k&lt;T&gt;&lt;script&gt;" in raw and "&amp;amp;" in raw
    assert not {"script", "img", "link", "iframe", "object"} & set(page.tags)
    # the kernel name's own text aside, no URL the page would load
    rest = raw.replace(escape(evil, quote=True), "").lower()
    assert "<script" not in rest and "http" not in rest and "url(" not in rest and "@import" not in rest
    assert " href=" not in rest and " src=" not in rest


def test_the_fixtures_pages_carry_no_url(run, tmp_path):
    for name in ("sdpa-flash", "ext-ptx", "cpu-op"):
        r, html, _ = _attest(run, ah.fixture(f"{name}.jsonl"), tmp_path)
        assert r.code in (0, 1), r.err
        raw, page = _page(html)
        assert "http" not in raw and "<script" not in raw.lower(), name
        assert len(page.charts) == 2 and all(page.charts), name


def test_a_partial_record_says_partial(run, tmp_path):
    r, html, data = _attest(run, ah.cut(tmp_path, "train", 30), tmp_path)
    assert r.code == 0, r.err
    _, page = _page(html)
    text = " ".join(page.text)
    assert "partial record" in text and "the window did not end in pid" in text
    warn = next(row for row in page.findings if row[1] == "WARN")
    assert "record is partial" in warn[2] and warn[3].startswith("give the workload a window it outlives")
    assert any("record is partial" in f["summary"] for f in data["findings"])


def test_a_bad_html_path_is_one_line_and_exit_2_before_the_workload(run, tmp_path):
    r = run("attest", "--record", str(ah.fixture("train.jsonl")), "--html", str(tmp_path / "no" / "x.html"))
    assert r.code == 2
    assert len(r.err.strip().splitlines()) == 1 and "x.html" in r.err and "does not exist" in r.err
    assert "Traceback" not in r.err and r.out == ""
    ran = tmp_path / "ran"
    r = run(
        "attest", "--dir", str(tmp_path / "runs"), "--html", str(tmp_path),
        "--", "python3", "-c", f"open({str(ran)!r}, 'w')",
    )  # fmt: skip
    assert r.code == 2 and len(r.err.strip().splitlines()) == 1 and "is a directory" in r.err
    assert not ran.exists()


def test_a_report_file_and_the_page_are_written_together_or_not_at_all(run, tmp_path):
    """The page goes through the report files' writer: when --report cannot be written, neither is."""
    html = tmp_path / "attest.html"
    r = run(
        "attest", "--record", str(ah.fixture("train.jsonl")), "--html", str(html),
        "--report", str(tmp_path / "no" / "r.json"),
    )  # fmt: skip
    assert r.code == 2 and not html.exists()


def test_with_a_workload_the_page_is_written(run, tmp_path):
    """A workload that never imports torch: no record, and the page says so."""
    html = tmp_path / "attest.html"
    r = run("attest", "--dir", str(tmp_path / "runs"), "--seconds", "5", "--html", str(html), "--", "python3",
            "-c", "pass")  # fmt: skip
    assert r.code == 0, r.err
    _, page = _page(html)
    text = " ".join(page.text)
    assert "no record: no process loaded torch with the probe" in text
    assert page.findings[0][:2] == ["G2", "SKIP"] and "no attest record" in page.findings[0][2]
    assert page.charts == []


def test_the_page_says_how_each_kernel_was_attributed(run, tmp_path):
    """The H100's flash-attn stand-in record: its kernel's library from the symbol table, the rest by name."""
    r, html, _ = _attest(run, ah.flash_attn_ran(tmp_path), tmp_path, "--attention", "sdpa")
    assert r.code == 1, r.err
    _, page = _page(html)
    by_library = _bars(page.charts[1])
    assert by_library["libflash_standin.so"] == pytest.approx(87.2, abs=0.051)
    text = " ".join(" ".join(page.text).split())
    assert "void flash::flash_fwd_kernel<64, true>(flash::Flash_fwd_params) flash-attn " in text
    assert "libflash_standin.so (symbol table)" in text and "torch (libtorch_cuda) (name pattern)" in text
    assert "libflash_standin.so [symbol table]" in text  # the library chart's label

"""Finding ids are an enum (GotchaId) that prints `G1` everywhere, as plain strings did: text, JSON, JUnit
and SARIF keep the output contract on every supported Python (3.10 has no StrEnum)."""

from __future__ import annotations

import json
import xml.etree.ElementTree as ET

import pytest

from sparkenv.core.report import LINE_RE, Finding, GotchaId, Report, Status, parse_ids
from sparkenv.render import json_report, junit, sarif, text
from sparkenv.rules import GOTCHAS


def _finding(gid: GotchaId | str = GotchaId.G10) -> Finding:
    return Finding(id=gid, status=Status.FAIL, summary="a CUDA 12 wheel", subject="cupy-cuda12x", fix="pin")


def test_every_way_of_printing_an_id_gives_its_value():
    gid = GotchaId.G10
    assert str(gid) == "G10"
    assert f"{gid}" == "G10"
    assert f"{gid:<4}|" == "G10 |"
    assert format(gid) == "G10"
    assert "%s" % gid == "G10"  # noqa: UP031 (the %-form is what is tested)
    assert "{}".format(gid) == "G10"  # noqa: UP032
    assert json.dumps(gid) == '"G10"'
    assert json.dumps({gid: 1}) == '{"G10": 1}'
    assert gid == "G10" and hash(gid) == hash("G10")  # a dict keyed by "G10" finds it


def test_the_reports_serialisers_print_the_plain_id():
    report = Report("check", "requirements.txt", [_finding()])
    line = text.finding_line(report.findings[0])
    assert line.startswith("G10 FAIL: a CUDA 12 wheel") and LINE_RE.match(line)
    doc = json.loads(json_report.render(report))
    assert doc["findings"][0]["id"] == "G10"
    assert '"id": "G10"' in json_report.render(report)
    case = ET.fromstring(junit.render(report)).find(".//testcase")
    assert case is not None and case.get("classname") == "sparkenv.check.G10"
    run = json.loads(sarif.render(report, "0"))["runs"][0]
    assert run["results"][0]["ruleId"] == "G10"
    assert "G10" in [r["id"] for r in run["tool"]["driver"]["rules"]]


def test_a_finding_read_back_converts_a_valid_id_and_rejects_an_invalid_one():
    back = _finding("G4")
    assert back.id is GotchaId.G4 and back.number == 4
    for bad in ("G11", "g4", "G0", "4", ""):
        with pytest.raises(ValueError, match="not a gotcha id"):
            _finding(bad)


def test_gotchas_and_select_options_are_the_enum():
    assert tuple(GotchaId) == GOTCHAS and [g.number for g in GOTCHAS] == list(range(1, 11))
    assert parse_ids(["4,g8", "10"], "--select") == {GotchaId.G4, GotchaId.G8, GotchaId.G10}
    assert all(isinstance(g, GotchaId) for g in parse_ids(["G1"], "--ignore") or ())

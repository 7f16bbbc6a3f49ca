"""One judgement per fact in a gate run: no two lines about the same subject (or the same fact under two
G-numbers) that contradict each other. Replayed on every recorded machine in tests/fixtures/facts and
the GB10 facts from public reports, with and without Triton's ptxas override."""

from __future__ import annotations

import json
from pathlib import Path

import gate_helpers as gh
import pytest

FACTS = sorted((Path(__file__).parents[1] / "fixtures" / "facts").glob("*.json"))
# Facts two rules could each judge: every line that names one is a judgement of it; one per run.
_ONE_FACT = {"Triton's ptxas": ("ptxas",)}


def _cases() -> list[tuple[str, dict]]:
    out = [(p.stem, json.loads(p.read_text())) for p in FACTS]
    gb10 = gh.gb10_from_reports()
    out.append(("gb10-reports", gb10))
    env = dict(gb10.get("env") or {})
    env["TRITON_PTXAS_PATH"] = "/usr/local/cuda/bin/ptxas"
    out.append(("gb10-reports-ptxas-set", gh.with_changes(gb10, env=env)))
    return out


@pytest.mark.parametrize(("name", "facts"), _cases(), ids=[n for n, _ in _cases()])
def test_a_gate_run_never_judges_one_fact_twice(tmp_path, name, facts):
    r = gh.gate_inprocess(["--facts", gh.write(tmp_path, facts), "--json"])
    findings = r.json()["findings"]
    by_subject: dict[str, set[str]] = {}
    for f in findings:
        by_subject.setdefault(f["subject"], set()).add(f["status"])
    clash = {s: st for s, st in by_subject.items() if "PASS" in st and st & {"WARN", "FAIL"}}
    assert not clash, f"{name}: a subject both passes and fails: {clash}"
    for fact, words in _ONE_FACT.items():
        lines = [
            f"{f['id']} {f['status']}: {f['summary']}"
            for f in findings
            if any(w in f["summary"].lower() for w in words)
        ]
        assert len(lines) <= 1, f"{name}: {fact} is judged {len(lines)} times: {lines}"

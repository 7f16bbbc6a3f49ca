"""Every `Rule` in the registry has rows in tests/rules/: at least one where all is well and one where it
is not, so a rule added without rows fails the suite (and a row names a rule the stages really run)."""

from __future__ import annotations

import importlib
from pathlib import Path

from rule_table import Row, registry

from sparkenv import rules
from sparkenv.core.report import Status

HERE = Path(__file__).parent

# Rules whose best outcome is INFO or silence, never PASS, and why.
NEVER_PASSES = {
    "g2.resolved": "it speaks only of sdist-only picks: a resolved wheel is nothing to say",
    "g3.live": "memory is reported (MemAvailable, page cache), never passed",
    "g4.live": "a power and temperature reading is reported, never passed",
    "g5.live": "bandwidth is a figure to plan with, never passed",
}
# Rules whose worst verdict on evidence is INFO with a fix, and why.
WORST_IS_INFO = {"g8.live": "a known playbook issue is advice with a fix, never a block"}


def all_rows() -> list[Row]:
    rows: list[Row] = []
    for path in sorted(HERE.glob("test_g*.py")):
        rows += importlib.import_module(path.stem).ROWS
    return rows


def missing(names: list[str], rows: list[Row]) -> list[str]:
    """What each rule lacks: a row where all is well, a row where it is not."""
    out = []
    for name in names:
        mine = [r for r in rows if r.rule == name]
        good = any(
            r.status is Status.PASS or (name in NEVER_PASSES and r.status in (Status.INFO, None))
            for r in mine
        )
        bad = any(
            r.status in (Status.FAIL, Status.WARN)
            or (name in WORST_IS_INFO and r.status is Status.INFO and r.fix)
            for r in mine
        )
        if not good:
            out.append(f"{name}: no row where all is well (PASS)")
        if not bad:
            out.append(f"{name}: no row where it is not (FAIL or WARN)")
    return out


def test_every_rule_in_the_registry_has_a_passing_and_a_failing_row():
    assert missing(sorted(registry()), all_rows()) == []


def test_every_row_names_a_rule_the_stages_run():
    known = registry()
    assert [r.id for r in all_rows() if r.rule not in known] == []
    assert set(NEVER_PASSES) | set(WORST_IS_INFO) <= set(known)


def _new_rule(facts):
    return []


def test_a_rule_added_without_rows_is_reported(monkeypatch):
    """The meta-test can fail: a rule added to rules/g4.py's RULES with no rows is named, twice."""
    from sparkenv.rules import g4

    monkeypatch.setattr(g4, "RULES", (*g4.RULES, rules.Rule(rules.Stage.INSTALLED, _new_rule, "nothing")))
    name = "test_every_rule_has_rows._new_rule"
    assert name in registry()
    assert missing(sorted(registry()), all_rows()) == [
        f"{name}: no row where all is well (PASS)",
        f"{name}: no row where it is not (FAIL or WARN)",
    ]


def test_a_rule_with_passing_rows_only_is_reported():
    rows = [r for r in all_rows() if not (r.rule == "g1.live" and r.status is not Status.PASS)]
    assert missing(["g1.live"], rows) == ["g1.live: no row where it is not (FAIL or WARN)"]

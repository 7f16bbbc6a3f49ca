"""Table-driven tests of the rules registry: each row is real typed facts of one stage, built the way
that stage's runner builds them (stage_facts.py), the registry entry it feeds, and the finding the user
must get for one subject: its status, and the fix they are told (a part of its text; None: no fix).

Every test_gN.py here holds the rows of rules/gN.py; test_every_rule_has_rows.py makes sure each `Rule`
in the registry has a row where all is well and a row where it is not, so a new rule without rows fails
the suite.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from sparkenv import rules
from sparkenv.core.report import Finding, Status, merge_by_subject


@dataclass(frozen=True)
class Row:
    rule: str  # Rule.name of the registry entry: "g1.declared"
    why: str  # the case, as a test id
    facts: Callable[[Any], Any]  # ctx -> that stage's facts
    subject: str
    status: Status | None  # None: the rule says nothing about the subject (all is well, nothing to tell)
    fix: str | None = None  # a part of the fix text; None: the finding carries no fix
    says: str | None = None  # a part of the summary

    @property
    def id(self) -> str:
        return f"{self.rule}:{self.why}"


def registry() -> dict[str, tuple[str, rules.Rule]]:
    """Rule.name -> (G-number, rule), for every rule the stages run."""
    return {rule.name: (gid, rule) for gid in rules.GOTCHAS for rule in rules.rules_of(gid)}


def judge(row: Row, ctx: Any) -> Finding | None:
    """The finding the row's rule gives its subject, merged per subject as `rules.evaluate` does; the
    rule is called directly, so a crash is a test error here, not an ERROR line."""
    _, rule = registry()[row.rule]
    found = merge_by_subject(list(rule.check(row.facts(ctx))))
    mine = [f for f in found if f.subject == row.subject]
    if row.status is None:
        assert not mine, f"{row.id}: expected nothing about {row.subject!r}, got {mine}"
        return None
    assert len(mine) == 1, f"{row.id}: expected one finding about {row.subject!r}, got {found}"
    return mine[0]


def check(row: Row, ctx: Any) -> Finding | None:
    gid, _ = registry()[row.rule]
    f = judge(row, ctx)
    if f is None:
        return None
    assert f.id == gid, f
    assert f.status is row.status, f"{row.id}: {f.status.value}: {f.summary}"
    if row.fix is None:
        assert f.fix is None, f"{row.id}: unexpected fix {f.fix!r}"
    else:
        assert f.fix and row.fix in f.fix, f"{row.id}: fix {f.fix!r} lacks {row.fix!r}"
    if row.says is not None:
        assert row.says in f.summary, f"{row.id}: {f.summary!r} lacks {row.says!r}"
    return f


def ids(rows: list[Row]) -> list[str]:
    return [r.id for r in rows]

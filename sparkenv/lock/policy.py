"""The resolve stage's facts and its calls into the rules registry (sparkenv/rules/, Stage.DECLARED,
Stage.RESOLVED and Stage.LOCKFILE). What is judged, and how, lives in rules/gN.py; this module only
shapes the facts.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from sparkenv import rules
from sparkenv.facts.declared import Declared, DeclaredFacts

if TYPE_CHECKING:  # the lock's facts are imported where the lock needs them: check does not
    from sparkenv.core.report import Finding
    from sparkenv.environment.profiles import Profile
    from sparkenv.facts.lockfile import LockFileFacts
    from sparkenv.facts.resolved import Locked


def declared_facts(
    declared: list[Declared],
    profile: Profile,
    index_urls: list[str],
    staged: bool = False,
    offline: bool = False,
    allow_replace: frozenset[str] = frozenset(),
) -> DeclaredFacts:
    """What Stage.DECLARED judges: all its rules read (a lock keeps their findings by it)."""
    return DeclaredFacts(tuple(declared), profile, tuple(index_urls), staged, offline, allow_replace)


def judge_declared(facts: DeclaredFacts) -> list[Finding]:
    return rules.evaluate(rules.Stage.DECLARED, facts)


def check_lockfile(facts: LockFileFacts) -> list[Finding]:
    """Stage.LOCKFILE: may the lock be written (`sparkenv lock`), is a written one current (`--check`)."""
    return rules.evaluate(rules.Stage.LOCKFILE, facts)


# ---------------------------------------------------------------------------------------------------
# The resolved set (sparkenv lock)


def check_resolved(
    locked: dict[str, Locked],
    roots: list[str],
    profile: Profile,
    no_deps_stage: str | None,
    excluded_names: list[str] | None = None,
    **more: object,
) -> list[Finding]:
    """`excluded_names`: what was kept out of resolution (default: all the base provides; less under
    --allow-replace). `more`: the other ResolvedFacts fields (edges, allow_replace, records, fallbacks)."""
    from sparkenv.facts.resolved import ResolvedFacts

    excluded = None if excluded_names is None else tuple(excluded_names)
    facts = ResolvedFacts(locked, tuple(roots), profile, no_deps_stage, excluded, **more)  # type: ignore[arg-type]
    return rules.evaluate(rules.Stage.RESOLVED, facts)

"""The rules registry: every judgement sparkenv makes, keyed by (G-number, stage).

`rules/gN.py` holds gotcha N's judgements, pure functions of one stage's typed facts (`sparkenv/facts/`)
that return Findings, and ends with `RULES`: the (stage, function, what it looks at) rows that the stage
runners and `sparkenv explain` read, so a rule listed there runs and a rule that runs is listed. A gotcha
that outgrows one file keeps `RULES` in gN.py and its stages in gN_<stage>.py. `rules/<concept>.py` is one
classifier several stages ask (cuda_major, unsloth, hosts, wrong_cpu, replaced, base_fit, data_age).

Rules never import a stage package (tests/test_layers.py); stages gather facts, call `evaluate(stage,
facts)` and decide nothing. A rule that raises is one ERROR line naming it (`run_rule`): never a traceback,
exit 70 or a hidden PASS. Facts types are imported only under TYPE_CHECKING, so importing a rule module
stays cheap (the gate runs before every workload). The map of every file: docs/architecture.md.
"""

from __future__ import annotations

import enum
import importlib
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import Any

from sparkenv.core.report import Finding, GotchaId, Status, merge_by_subject

GOTCHAS = tuple(GotchaId)  # G1 … G10, in order: the catalogue's (data/gotchas.toml)


class Stage(str, enum.Enum):
    """Where a judgement is made, earliest first; the value is what `sparkenv explain` prints."""

    HOST = "host"  # sparkenv host: the Spark itself, outside any container (Docker, driver, kernel, CPU)
    DECLARED = "declared"  # sparkenv check, and the first step of sparkenv lock: the project's inputs
    RESOLVED = "resolved"  # sparkenv lock: every file of the resolved set, with its Requires-Dist
    LOCKFILE = "lockfile"  # sparkenv lock: may the lock be written; lock --check: a lock against its inputs
    IMAGE = "image"  # sparkenv build: the image being built, before it is tagged
    INSTALLED = "installed"  # sparkenv audit, and build's self-audit of its image: read from outside
    LIVE = "live"  # sparkenv gate: the running machine, as the image's entrypoint
    WATCH = "watch"  # sparkenv gate --watch, sparkenv watch: readings over time beside the workload
    ATTEST = "attest"  # sparkenv attest, gate --attest: the kernels the workload's window launched

    @property
    def commands(self) -> str:
        return _COMMANDS[self]


_COMMANDS = {
    Stage.DECLARED: "sparkenv check, sparkenv lock",
    Stage.RESOLVED: "sparkenv lock",
    Stage.LOCKFILE: "sparkenv lock, sparkenv lock --check",
    Stage.IMAGE: "sparkenv build",
    Stage.INSTALLED: "sparkenv audit, sparkenv build (its image audits itself)",
    Stage.LIVE: "sparkenv gate",
    Stage.WATCH: "sparkenv gate --watch, sparkenv watch",
    Stage.HOST: "sparkenv host",
    Stage.ATTEST: "sparkenv attest, sparkenv gate --attest",
}


@dataclass(frozen=True)
class Rule:
    stage: Stage
    check: Callable[[Any], list[Finding]]
    looks_at: str  # one sentence for `sparkenv explain`: what this stage reads to judge it

    @property
    def name(self) -> str:
        # A gotcha's rules may live in several files (rules/g1_installed.py …): the name says the gotcha
        # (`g1.installed`), as RULES in rules/g1.py lists it, not the file that holds the function.
        module = self.check.__module__.rsplit(".", 1)[-1]
        gotcha, _, part = module.partition("_")
        if part and gotcha[:1] == "g" and gotcha[1:].isdigit():
            module = gotcha
        return f"{module}.{self.check.__name__}"


class Lazy:
    """A rule function named by its module (rules/gN_<stage>.py) and name, imported at its first call:
    a stage imports only the rule modules of its own stage (check does not import the gate's). Kept, with
    HAS_STAGE, for a measured start-up cost: benchmarks/README.md "Kept for start-up"."""

    def __init__(self, module: str, name: str) -> None:
        self.__module__ = f"sparkenv.rules.{module}"
        self.__name__ = name
        self._fn: Callable[[Any], list[Finding]] | None = None

    def __call__(self, facts: Any) -> list[Finding]:
        if self._fn is None:
            self._fn = getattr(importlib.import_module(self.__module__), self.__name__)
        return self._fn(facts)


def module(gid: GotchaId | str) -> Any:
    """rules/gN.py for "GN"."""
    return importlib.import_module(f"sparkenv.rules.{gid.lower()}")


def rules_of(gid: GotchaId | str) -> tuple[Rule, ...]:
    return tuple(module(gid).RULES)


# Which rules/gN.py have rules at a stage, so that a stage imports only those modules (`sparkenv check`
# would otherwise import every module, G7's ELF and fatbin readers and G10's launch reader among them,
# for three modules' rules). An index of the modules' RULES, not a second source:
# tests/rules/test_rules_registry.py holds it to them.
HAS_STAGE: dict[Stage, frozenset[str]] = {
    Stage.DECLARED: frozenset({"G1", "G2", "G9"}),
    Stage.RESOLVED: frozenset({"G1", "G2", "G7", "G9"}),
    Stage.LOCKFILE: frozenset({"G9"}),
    Stage.IMAGE: frozenset({"G9"}),
    Stage.HOST: frozenset({"G1", "G3", "G4", "G9", "G10"}),
    Stage.ATTEST: frozenset({"G2", "G7"}),
}


def rules_for(stage: Stage, gotchas: Iterable[GotchaId] = GOTCHAS) -> list[tuple[GotchaId, Rule]]:
    """(G-number, rule) for every rule of this stage, in G order."""
    having = HAS_STAGE.get(stage)  # None: every module (INSTALLED and LIVE have rules in most)
    return [
        (gid, rule)
        for gid in gotchas
        if having is None or gid.value in having
        for rule in rules_of(gid)
        if rule.stage is stage
    ]


def run_rule(gid: GotchaId, rule: Rule, facts: Any) -> list[Finding]:
    """The one crash-isolation wrapper of every stage: a rule that raises is an ERROR line naming it."""
    try:
        return list(rule.check(facts))
    except Exception as exc:
        return [
            Finding(
                id=gid,
                status=Status.ERROR,
                summary=f"the check {rule.name} crashed: {exc.__class__.__name__}: {exc}",
                subject=f"check {rule.name}",
                fix="please report it with the facts that caused it (sparkenv gate --dump-facts, or the "
                "inputs)",
            )
        ]


def evaluate(stage: Stage, facts: Any, gotchas: Iterable[GotchaId] = GOTCHAS) -> list[Finding]:
    """Every rule of `stage` over `facts`, each isolated; one finding per (G-number, subject)."""
    findings: list[Finding] = []
    for gid, rule in rules_for(stage, gotchas):
        findings += run_rule(gid, rule, facts)
    return merge_by_subject(findings)

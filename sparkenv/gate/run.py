"""Run the gate: gather facts (or replay a snapshot), apply the ten checks, build the report."""

from __future__ import annotations

import contextlib
import time
from typing import TYPE_CHECKING, Any

from sparkenv import rules
from sparkenv.core.report import Finding, Report
from sparkenv.facts.live import GateFacts
from sparkenv.gate.early import SECTIONS

if TYPE_CHECKING:  # the probes are imported where they run: a check worker imports this module too
    from sparkenv.gate.probes import Options


def load_facts(path: str) -> dict[str, Any]:
    from sparkenv.environment import facts_file

    return facts_file.load(path)


# The data files the live checks and the report read: loaded while the probes run. Only a head start:
# one missing here is loaded when a check asks for it, as before.
LIVE_DATA = ("cuda", "drivers", "hosts", "packages", "playbook_issues")


def prepare_checks(
    gotchas: tuple[rules.GotchaId, ...] = rules.GOTCHAS, report: bool = True, data: bool = True
) -> None:
    """While the probes run (the gate waits for NVML and its other forked probes): import the live
    checks' modules of `gotchas` and (`report`) the report's, and (`data`) load their data files, so
    that the checks start at once when the facts are in. Any failure is left for the checks themselves
    to meet and report."""
    import importlib

    try:
        for _gid, rule in rules.rules_for(rules.Stage.LIVE, gotchas):
            importlib.import_module(rule.check.__module__)
        if report:
            importlib.import_module("sparkenv.render.emit")
        if data and gotchas:
            _load_data(lambda: True)
    except Exception:  # met again, and reported, where the checks run
        pass


def _load_data(waiting: Any) -> None:
    """The live checks' data files, one after another while `waiting()` says the facts have not come."""
    from sparkenv import knowledge

    for name in LIVE_DATA:
        if not waiting():
            return
        getattr(knowledge, name)()


def _in_workers() -> tuple[rules.GotchaId, ...]:
    """The G-numbers the check workers started early (gate/early.py) will judge."""
    from sparkenv.gate import early

    return tuple(rules.GotchaId(g) for group in early.pending_groups() for g in group)


def prepare_meanwhile() -> None:
    """The gate's own preparation while the probes run: the report's modules, and the checks that no
    worker judges (all of them where none was started)."""
    left = set(_in_workers())
    prepare_checks(tuple(g for g in rules.GOTCHAS if g not in left))


def _judged(gids: tuple[rules.GotchaId, ...], facts: GateFacts) -> dict[str, list[Finding]]:
    """Each G-number's findings, rule by rule in the registry's order, not yet merged by subject: the
    one judgement (rules.run_rule) wherever it runs."""
    out: dict[str, list[Finding]] = {g.value: [] for g in gids}
    for gid, rule in rules.rules_for(rules.Stage.LIVE, gids):
        out[gid.value] += rules.run_rule(gid, rule, facts)
    return out


def _warm_up(gids: tuple[rules.GotchaId, ...], sections: tuple[str, ...]) -> None:
    """While the probes run: the group's checks over facts where every probe answered nothing (each
    section empty), then where a GPU did, their findings thrown away, so that what a check imports or
    loads only when called (a data file, a helper module) is in place when the facts come. Any failure
    is the real run's to meet."""
    import contextlib

    from sparkenv import knowledge

    empty: dict[str, Any] = {name: {} for name in sections}
    passes = [empty]
    with contextlib.suppress(Exception):  # and with a GPU, a GB10 (the most checks apply to it)
        major, minor = knowledge.gate().gb10.capability
        passes.append({**empty, "gpu": {"gpus": [{"compute_cap": f"{major}.{minor}"}]}})
    for facts in passes:
        with contextlib.suppress(Exception):  # the checks run again, isolated per rule, on the real facts
            _judged(gids, GateFacts(facts))


def check_group(group: tuple[str, ...], receive: Any) -> dict[str, list[Finding]]:
    """In a check worker (gate/early.py): import the group's checks and load the data files while the
    probes run, then judge the facts the gate sends (raw, need_gb, strict)."""
    gids = tuple(rules.GotchaId(g) for g in group)
    prepare_checks(gids, report=False, data=False)
    _warm_up(gids, SECTIONS)  # loads the data files the group's checks read on those facts
    # The other data files a live check reads, where real facts take a branch the warm-up did not: loaded
    # only while the facts are still to come (receive.waiting(): core/pool.py), so that a worker whose
    # facts are there judges at once (G8's had loaded all five before it was ready: the last worker).
    waiting = getattr(receive, "waiting", None)
    if waiting is not None:
        with contextlib.suppress(Exception):  # met again, and reported, where the checks run
            _load_data(waiting)
    raw, need_gb, strict = receive()
    return _judged(gids, GateFacts(raw, need_gb, strict))


def evaluate(
    raw: dict[str, Any], need_gb: float = 0.0, strict: bool = False, deadline: float | None = None
) -> tuple[list[Finding], GateFacts]:
    """Every live check over the facts, each G-number's findings in G order, merged by subject: the
    groups the check workers took judged there (fed the facts at once, answering in parallel), the rest
    here, and here too every group whose worker did not answer by `deadline` (died, killed, late)."""
    from sparkenv.core import pool
    from sparkenv.gate import early

    facts = GateFacts(raw, need_gb, strict)
    workers = early.checkers()
    end = deadline if deadline is not None else time.monotonic() + 10.0
    payload = pool.packed((raw, need_gb, strict)) if workers else b""
    fed = {group: w for group, w in workers.items() if w.send(payload, end)}
    judged: dict[str, list[Finding]] = {}
    for group, w in fed.items():
        try:
            answer = w.result(end)
        except Exception:  # the worker failed (pool.Failed) or its checks' imports did: judged here
            continue
        if isinstance(answer, dict) and set(answer) == set(group):
            judged.update(answer)
    left = tuple(g for g in rules.GOTCHAS if g.value not in judged)
    judged.update(_judged(left, facts))
    findings = [f for g in rules.GOTCHAS for f in judged[g.value]]
    return rules.merge_by_subject(findings), facts


def gate(
    opts: Options, facts_file: str | None = None, need_gb: float = 0.0, strict: bool = False
) -> tuple[Report, dict[str, Any]]:
    if facts_file:
        raw = load_facts(facts_file)
        if opts.workload:
            raw["workload"] = list(opts.workload)
        source = f"replayed from {facts_file}"
    else:
        from sparkenv.gate.probes import gather

        raw = gather(opts, meanwhile=prepare_meanwhile)
        source = "live"
    # the check workers answer within the gate's deadline, or their groups are judged here
    findings, facts = evaluate(raw, need_gb, strict, time.monotonic() + opts.deadline_s)
    report = Report("gate", facts.gpu_name or facts.platform, findings)
    report.context = {
        "platform": facts.platform,
        "gpu": facts.gpu_name,
        "capability": list(facts.capability) if facts.capability else None,
        "facts": source,
        "taken_at": raw.get("taken_at"),
        "gather_s": raw.get("gather_s"),
        "workload": facts.workload,
        "mode": "deep" if facts.deep else "static",
    }
    return report, raw

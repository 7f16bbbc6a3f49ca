"""G9 at Stage.RESOLVED: the lock's resolved set (sparkenv lock): what the base provides kept out of the
lock, every Requires-Dist against the base's exact versions and the locked ones (a closed lock), fallbacks
to old releases."""

from __future__ import annotations

from collections.abc import Callable
from functools import partial
from typing import TYPE_CHECKING

from packaging.utils import canonicalize_name
from packaging.version import InvalidVersion, Version

from sparkenv.core.report import Finding, GotchaId, Status
from sparkenv.knowledge import packages
from sparkenv.rules import unresolved

if TYPE_CHECKING:
    from packaging.specifiers import SpecifierSet

    from sparkenv.environment.profiles import Profile
    from sparkenv.facts.graph import Edge
    from sparkenv.facts.resolved import ResolvedFacts

_finding = partial(Finding, GotchaId.G9)  # every finding of this module is G9's


def resolved(facts: ResolvedFacts) -> list[Finding]:
    # the base's real versions, a closed lock, old fallbacks: the same stage, judged below
    return [
        *_hash_mismatches(facts),
        *_metadata_problems(facts),
        *_locked(facts),
        *_provided_by_base(facts),
        *_no_deps_missing(facts),
        *resolved_base(facts),
        *resolved_closure(facts),
        *resolved_fallback(facts),
        *unresolved.findings(facts, GotchaId.G9),
    ]


def _hash_mismatches(facts: ResolvedFacts) -> list[Finding]:
    """A file the lock names, read whole, whose bytes are not those the index's sha256 names: the lock
    would pin a hash no install can match (G9: the lock's integrity). A FAIL, so no lock is written."""
    return [
        _finding(
            status=Status.FAIL,
            summary=f"{m.file}: the index gives sha256 {m.expected[:12]}… but serves bytes with sha256 "
            f"{m.actual[:12]}…; a lock pinning that hash can never install",
            subject=m.file,
            evidence=(m.file, f"expected sha256:{m.expected}", f"served sha256:{m.actual}"),
            fix="the index serves bytes that do not match its own hash: use another index or mirror, or "
            "report it to the index's operator",
        )
        for m in facts.hash_mismatches
    ]


def _metadata_problems(facts: ResolvedFacts) -> list[Finding]:
    """Files whose requirements cannot be checked: an ERROR each, so no lock is written."""
    out: list[Finding] = []
    for p in facts.metadata_problems:
        if p.reason is not None:
            out.append(
                _finding(
                    status=Status.ERROR,
                    summary=f"cannot read the metadata of {p.file} ({p.key} {p.version}): {p.reason}; its "
                    "requirements cannot be checked, so no lock is written",
                    subject=p.key,
                    evidence=(p.file,),
                    fix="make the index serve the file (or its PEP 658 .metadata), then lock again",
                )
            )
        out.extend(
            _finding(
                status=Status.ERROR,
                summary=f"{p.file}: Requires-Dist {bad!r} is not a valid requirement",
                subject=p.key,
                evidence=(p.file,),
            )
            for bad in p.invalid
        )
    return out


def _locked(facts: ResolvedFacts) -> list[Finding]:
    """What the lock pins: nothing the base provides, drift-prone packages exactly."""
    out: list[Finding] = []
    for key, pkg in sorted(facts.locked.items()):
        ev, desc = facts.evidence(key), facts.describe(key)
        if key in facts.excluded:
            out.append(
                _finding(
                    status=Status.FAIL,
                    summary=f"{desc} would be installed beside or over the base's "
                    f"{facts.profile.provider(key)}",
                    subject=key,
                    evidence=ev,
                    fix=f"exclude {key}: the base provides it",
                )
            )
        elif key in packages().drift_prone:
            out.append(
                _finding(
                    status=Status.PASS,
                    summary=f"{key} pinned =={pkg.version} in the lock",
                    subject=key,
                    evidence=ev,
                )
            )
    return out


def _provided_by_base(facts: ResolvedFacts) -> list[Finding]:
    """What the base provides, and which requirement would have pulled it in; not said of a base package
    some requirement conflicts with (resolved_base fails it)."""

    profile, excluded = facts.profile, facts.excluded
    conflicted = {f.subject for f in resolved_base(facts)}
    wanted: dict[str, list[str]] = {}
    for key in facts.locked:
        for req in facts.applicable_requires(key):
            dep = canonicalize_name(req.name)
            if dep in excluded and (profile.provider(dep) or dep) not in conflicted:
                base_v = profile.provides.get(profile.provider(dep) or dep, "")
                if req.url or (base_v and not accepts(req.specifier, base_v)):
                    continue  # a conflict with the base: resolve/closure.py reports it as a FAIL
                wanted.setdefault(dep, []).append(f"{facts.chain(key)} → {dep}")
    out: list[Finding] = []
    for dep, paths in sorted(wanted.items()):
        prov = profile.provider(dep) or dep
        out.append(
            _finding(
                status=Status.PASS,
                summary=f"{'; '.join(sorted(paths)[:4])}{' …' if len(paths) > 4 else ''} excluded: "
                "provided by the base "
                f"({prov} {profile.provides.get(prov) or 'version not recorded'})",
                subject=dep,
                evidence=tuple(sorted(paths)),
            )
        )
    return out


def _no_deps_missing(facts: ResolvedFacts) -> list[Finding]:
    """The --no-deps stage's packages: what they require that the lock does not carry."""

    if not facts.no_deps_stage:
        return []
    out: list[Finding] = []
    for key, pkg in sorted(facts.locked.items()):
        if pkg.stage != facts.no_deps_stage or not pkg.requires:
            continue
        required = {canonicalize_name(r.name) for r in facts.applicable_requires(key)}
        missing = sorted(required - set(facts.locked) - set(facts.excluded))
        if missing:
            out.append(
                _finding(
                    status=Status.INFO,
                    summary=f"{key} {pkg.version} is installed --no-deps; not in the lock: "
                    f"{', '.join(missing)}",
                    subject=key,
                    evidence=tuple(missing),
                )
            )
    return out


def accepts(req_specifier: SpecifierSet, version: str) -> bool:
    """PEP 440 containment with pre-releases allowed: the base's version is what it is."""

    try:
        return req_specifier.contains(Version(version), prereleases=True)
    except InvalidVersion:
        return False


def _shortest_first(path: str) -> tuple[int, str]:
    """Chains shortest first, then by name: the same text whatever order the set gives them in."""
    return len(path), path


def _show(e: Edge) -> str:
    return f"{e.target}{e.req.specifier}" if str(e.req.specifier) else e.target


def base_conflicts(
    versions: dict[str, str],
    graph_edges: list[Edge],
    chain: dict[str, list[str]],
    profile: Profile,
    allow_replace: set[str] | frozenset[str],
) -> list[Finding]:
    """G9 for requirements on what the base provides, one finding per provided package listing every
    chain that asks for another version. `versions`: locked name -> version."""
    bad, unknown = _on_the_base(graph_edges, profile, allow_replace)

    def path(e: Edge) -> str:
        return " → ".join(
            [*chain.get(e.source, [e.source]), f"{e.target} @ {e.req.url}" if e.req.url else _show(e)]
        )

    out = [_replaces_base(provider, group, path, profile) for provider, group in sorted(bad.items())]
    for provider, group in sorted(unknown.items()):
        paths = sorted({path(e) for e in group}, key=_shortest_first)
        out.append(
            _finding(
                status=Status.WARN,
                summary=f"{'; '.join(paths[:4])}: the base provides {provider} but "
                f"{profile.path or profile.name} does not record its version; cannot tell whether it would "
                "be replaced",
                subject=provider,
                evidence=tuple(paths),
                fix=f"record provides.{provider} in the profile",
            )
        )
    return out


def _on_the_base(
    graph_edges: list[Edge], profile: Profile, allow_replace: set[str] | frozenset[str]
) -> tuple[dict[str, list[Edge]], dict[str, list[Edge]]]:
    """Requirements on what the base provides, by provider: those its version does not meet, and those
    on a provider whose version the profile does not record."""
    bad: dict[str, list[Edge]] = {}
    unknown: dict[str, list[Edge]] = {}
    for dep, group in _by_target(graph_edges):
        provider = profile.provider(dep)
        if provider is None or provider in allow_replace or dep in allow_replace:
            continue
        base_v = profile.provides.get(provider, "")
        for e in group:
            if e.req.url or (base_v and not accepts(e.req.specifier, base_v)):
                bad.setdefault(provider, []).append(e)
            elif not base_v and str(e.req.specifier):
                unknown.setdefault(provider, []).append(e)
    return bad, unknown


def _replaces_base(
    provider: str, group: list[Edge], path: Callable[[Edge], str], profile: Profile
) -> Finding:
    base_v = profile.provides.get(provider, "")
    paths = sorted({path(e) for e in group}, key=_shortest_first)
    sources = sorted({e.source for e in group})
    shown = "; ".join(paths[:4]) + (f"; … ({len(paths) - 4} more)" if len(paths) > 4 else "")
    one = len(sources) == 1
    return _finding(
        status=Status.FAIL,
        summary=f"{shown}: not met by the base's {provider} {base_v} ({profile.image or profile.name}, "
        f"pre-releases count); installed with pip, {'this replaces' if len(paths) == 1 else 'these replace'} "
        f"the base's {provider}",
        subject=provider,
        evidence=(*paths, f"base: {provider} {base_v}"),
        fix=f"pin {'a release' if one else 'releases'} of {', '.join(sources)} that "
        f"accept{'s' if one else ''} {provider} {base_v}, choose another profile "
        f"(`sparkenv profiles`), or replace the base's {provider} on purpose with --allow-replace "
        f"{provider} (recorded in the lock)",
    )


def unclosed(
    versions: dict[str, str],
    graph_edges: list[Edge],
    chain: dict[str, list[str]],
    profile: Profile,
    allow_replace: set[str] | frozenset[str],
) -> list[Finding]:
    """G9 FAIL for each requirement neither the lock nor the base satisfies."""
    out: list[Finding] = []
    for dep, group in _by_target(graph_edges):
        provider = profile.provider(dep)
        if provider is not None and provider not in allow_replace and dep not in allow_replace:
            continue  # judged against the base's version by base_conflicts
        for e in group:
            path = " → ".join(chain.get(e.source, [e.source]))
            src = f"{e.source} {versions.get(e.source, '')}".strip()
            if dep not in versions:
                why = f"{dep} is not in the lock"
            elif e.req.url:
                continue  # a direct reference: uv resolved that very file
            elif not accepts(e.req.specifier, versions[dep]):
                why = f"the lock has {dep} {versions[dep]}"
            else:
                continue
            out.append(
                _finding(
                    status=Status.FAIL,
                    summary=f"the lock is not closed: {src} (via {path}) requires {e.req} and {why}; "
                    f"`import {e.source.replace('-', '_')}` can fail",
                    subject=e.source,
                    evidence=(f"via {path}", str(e.req)),
                    fix=f"add {_show(e)} to the inputs (or drop {e.source}), then lock again",
                )
            )
    return out


def closed_info(n_packages: int, n_edges: int) -> Finding:
    return _finding(
        status=Status.PASS,
        summary=f"the resolved set is closed: {n_edges} requirement(s) of {n_packages} package(s), markers "
        "evaluated for the target and extras followed, are all met by the lock or the base",
        subject="closure",
    )


def _by_target(graph_edges: list[Edge]) -> list[tuple[str, list[Edge]]]:
    grouped: dict[str, list[Edge]] = {}
    for e in graph_edges:
        grouped.setdefault(e.target, []).append(e)
    return sorted(grouped.items())


def resolved_base(facts: ResolvedFacts) -> list[Finding]:
    """Every requirement in the graph on what the base provides must accept the base's exact version."""
    return base_conflicts(
        facts.versions, list(facts.edges), facts.graph_chain, facts.profile, facts.allow_replace
    )


def resolved_closure(facts: ResolvedFacts) -> list[Finding]:
    """Every requirement in the graph is met by the lock or the base (a --no-deps install adds nothing)."""
    # G2 (a build) or rules/unresolved.py says why each is missing: not a second line, and no PASS saying
    # the set is closed beside them
    failed = {bf.key for bf in facts.build_failures} | unresolved.keys(facts)
    edges = [e for e in facts.edges if e.target not in failed]
    gaps = unclosed(facts.versions, edges, facts.graph_chain, facts.profile, facts.allow_replace)
    known = all(p.requires is not None for p in facts.locked.values())
    if facts.locked and not gaps and known and not facts.unresolved and not facts.build_failures:
        return [closed_info(len(facts.locked), len(facts.edges))]
    return gaps


def is_fallback(gap_days: int | None, newer_minor: bool, limit: int) -> bool:
    """A locked release `gap_days` older than the newest (None: no upload dates on the index, then a
    newer major or minor release counts)."""
    return gap_days >= limit if gap_days is not None else newer_minor


def resolved_fallback(facts: ResolvedFacts) -> list[Finding]:
    """A declared requirement not pinned exactly, or an sdist-only pick, far older than its newest release."""
    out = []
    limit = packages().fallback_days
    for fb in facts.fallbacks:
        if fb.user_capped or not is_fallback(fb.gap_days, fb.newer_minor, limit):
            continue
        why = (
            f"{'; '.join(fb.caps[:3])} exclude{'s' if len(fb.caps) == 1 else ''} {fb.newest}"
            if fb.caps
            else "; ".join(fb.reasons) or "a requirement of it cannot be met with the rest"
        )
        age = f", {fb.gap_days // 365} year(s) older" if fb.gap_days and fb.gap_days >= 365 else ""
        via = " → ".join(facts.graph_chain.get(fb.key, [fb.key]))
        out.append(
            _finding(
                status=Status.WARN,
                summary=f"{fb.key} {fb.version} (via {via}) is a fallback: the newest release is "
                f"{fb.newest}{age}; why: {why}",
                subject=fb.key,
                evidence=(f"newest {fb.newest}", *fb.caps),
                fix=f"pin {fb.key} to the release you want, or choose a profile it has wheels for",
            )
        )
    return out

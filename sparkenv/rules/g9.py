"""G9 — drift: a bare pip environment, a pip install that replaced the base's torch, packages moved off
the image's pins or the lock: every stage's judgement.

declared: pins that would replace what the base provides, drift-prone packages not pinned exactly, the
Unsloth family installed with its dependencies (check, lock); resolved: what the base provides kept out
of the lock, drift-prone packages pinned, --no-deps stages (lock); lockfile: whether the lock may be
written, and a written lock against its inputs (lock, lock --check); image: the base's packages untouched
by the lock's install steps (build); installed: container markers, NGC torch replaced, packages off the
image's constraint file, drift against --lock, requirements unmet as pip check reports them (audit,
build's self-audit); live: the same markers and
NGC torch on the running machine (gate).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from sparkenv.cuda import rules
from sparkenv.facts import ngc
from sparkenv.knowledge import packages
from sparkenv.report import Finding, GotchaId, Status
from sparkenv.rules import Rule, Stage, unsloth

if TYPE_CHECKING:
    from packaging.requirements import Requirement
    from packaging.specifiers import SpecifierSet

    from sparkenv.facts.declared import Declared, DeclaredFacts
    from sparkenv.facts.graph import Edge
    from sparkenv.facts.image import BaseCheck
    from sparkenv.facts.installed import AuditFacts
    from sparkenv.facts.live import GateFacts
    from sparkenv.facts.lockfile import Currency, LockFileFacts, Outcome
    from sparkenv.facts.resolved import ResolvedFacts
    from sparkenv.profiles import Profile
    from sparkenv.rules import requirements


# ---------------------------------------------------------------------------------------------------
# Stage.DECLARED: the project's inputs


def declared(facts: DeclaredFacts) -> list[Finding]:
    profile, staged = facts.profile, facts.staged
    compiles = packages().compiles_cuda
    out: list[Finding] = []
    for d in facts.applicable:
        key = d.key
        assert key is not None
        ev = (d.where,)
        desc = f"{key}{d.specifier}" if str(d.specifier) else key
        provider = profile.provider(key)
        if provider is not None and key not in compiles:  # a CUDA-compiling package is G2's to judge
            out += _base_provided(d, profile, provider)
        if key in packages().drift_prone and provider is None and not staged:
            if d.exact:
                pinned = f"{key} pinned exactly ({d.exact}, {d.where})"
                out.append(
                    Finding(id=GotchaId.G9, status=Status.PASS, summary=pinned, subject=key, evidence=ev)
                )
            else:
                out.append(
                    Finding(
                        id=GotchaId.G9,
                        status=Status.WARN,
                        summary=f"{desc} ({d.where}) is not pinned exactly: {key} is drift-prone (torch, "
                        "triton, xformers "
                        "and transformers must move together)",
                        subject=key,
                        evidence=ev,
                        fix=f"pin {key}==<version>, or install from the lock `sparkenv lock` writes",
                    )
                )
        if unsloth.is_member(key):
            out.append(_declared_unsloth(d, profile, staged))
    if facts.offline:
        out.append(
            Finding(
                id=GotchaId.G9,
                status=Status.INFO,
                summary="offline, check sees the declared requirements only: what their dependencies ask "
                "of the base's versions, CPU-only builds, what a --no-deps stage misses and old fallbacks "
                "need the index; `sparkenv lock` decides those",
                subject="resolution",
            )
        )
    return out


def replaced_on_purpose(findings: list[Finding], allowed: frozenset[str]) -> list[Finding]:
    """A declared pin on a base package named by `sparkenv lock --allow-replace` replaces it on purpose:
    the FAIL of any declared rule that judged it replacing the base (G2's flash-attn, G9's pins) is INFO."""
    out = []
    for f in findings:
        if f.subject in allowed and f.status is Status.FAIL and f.id in (GotchaId.G2, GotchaId.G9):
            f = Finding(
                id=f.id,
                status=Status.INFO,
                summary=f"{f.summary} — replaced on purpose (--allow-replace {f.subject}); resolved like any "
                "package",
                subject=f.subject,
                evidence=f.evidence,
            )
        out.append(f)
    return out


def _base_provided(d: Declared, profile: Profile, provider: str) -> list[Finding]:
    key = d.key
    assert key is not None
    base_v = profile.provides[provider]
    ev = (d.where,)
    name = f"{provider} {base_v}" if base_v else provider
    if d.url:
        return [
            Finding(
                id=GotchaId.G9,
                status=Status.FAIL,
                summary=f"{key} @ {d.url} ({d.where}) would replace the base's {name}",
                subject=key,
                evidence=ev,
                fix=f"drop it: {profile.image} provides {provider}",
            )
        ]
    if not str(d.specifier) or (base_v and d.specifier.contains(base_v, prereleases=True)):
        return [
            Finding(
                id=GotchaId.G9,
                status=Status.PASS,
                summary=f"{key}{d.specifier} is provided by the base ({name}); excluded from resolution",
                subject=key,
                evidence=ev,
            )
        ]
    if not base_v:
        return [
            Finding(
                id=GotchaId.G9,
                status=Status.WARN,
                summary=f"{key}{d.specifier} ({d.where}): the base provides {provider} but its version is "
                "not recorded in "
                f"{profile.path}; cannot tell whether it would be replaced",
                subject=key,
                evidence=ev,
                fix=f"record provides.{provider} in the profile, or drop the pin",
            )
        ]
    return [
        Finding(
            id=GotchaId.G9,
            status=Status.FAIL,
            summary=f"{key}{d.specifier} ({d.where}) would replace the base's {name}",
            subject=key,
            evidence=ev,
            fix=f"drop the pin (the base's {provider} is kept out of resolution), or pick a profile "
            "whose base has it",
        )
    ]


def _declared_unsloth(d: Declared, profile: Profile, staged: bool) -> Finding:
    key = d.key
    assert key is not None
    ev = (d.where,)
    if staged:
        return Finding(
            id=GotchaId.G9,
            status=Status.PASS,
            summary=f"{key} goes into its own --no-deps stage after the rest",
            subject=key,
            evidence=ev,
        )
    if d.no_deps:
        return Finding(
            id=GotchaId.G9,
            status=Status.PASS,
            summary=f"{key} ({d.where}) is in a --no-deps stage",
            subject=key,
            evidence=ev,
        )
    torch = profile.provider("torch")
    status = Status.FAIL if torch else Status.WARN
    why = (
        f"its dependencies replace the base's torch {profile.provides[torch]} with a PyPI build "
        "(unslothai/notebooks#132)"
        if torch
        else "its dependencies move torch, triton and xformers"
    )
    return Finding(
        id=GotchaId.G9,
        status=status,
        summary=f"{key} ({d.where}) is installed with its dependencies: {why}",
        subject=key,
        evidence=ev,
        fix="install the Unsloth family in a second stage with pip install --no-deps (mark that file "
        "`# sparkenv: no-deps`), or install from the lock `sparkenv lock` writes",
    )


# ---------------------------------------------------------------------------------------------------
# Stage.RESOLVED: the lock's resolved set


def resolved(facts: ResolvedFacts) -> list[Finding]:
    from packaging.utils import canonicalize_name

    profile = facts.profile
    excluded = facts.excluded
    out: list[Finding] = []
    for key, pkg in sorted(facts.locked.items()):
        ev, desc = facts.evidence(key), facts.describe(key)
        if key in excluded:
            out.append(
                Finding(
                    id=GotchaId.G9,
                    status=Status.FAIL,
                    summary=f"{desc} would be installed beside or over the base's {profile.provider(key)}",
                    subject=key,
                    evidence=ev,
                    fix=f"exclude {key}: the base provides it",
                )
            )
        elif key in packages().drift_prone:
            out.append(
                Finding(
                    id=GotchaId.G9,
                    status=Status.PASS,
                    summary=f"{key} pinned =={pkg.version} in the lock",
                    subject=key,
                    evidence=ev,
                )
            )
    # What the base provides, and which requirement would have pulled it in; not said of a base package
    # some requirement conflicts with (resolved_base fails it).
    conflicted = {f.subject for f in resolved_base(facts)}
    wanted: dict[str, list[str]] = {}
    for key in facts.locked:
        for req in facts.applicable_requires(key):
            dep = canonicalize_name(req.name)
            if dep in excluded and (profile.provider(dep) or dep) not in conflicted:
                base_v = profile.provides.get(profile.provider(dep) or dep, "")
                if req.url or (base_v and not _accepts(req, base_v)):
                    continue  # a conflict with the base: resolve/closure.py reports it as a FAIL
                wanted.setdefault(dep, []).append(f"{facts.chain(key)} → {dep}")
    for dep, paths in sorted(wanted.items()):
        prov = profile.provider(dep) or dep
        out.append(
            Finding(
                id=GotchaId.G9,
                status=Status.PASS,
                summary=f"{'; '.join(sorted(paths)[:4])}{' …' if len(paths) > 4 else ''} excluded: "
                "provided by the base "
                f"({prov} {profile.provides.get(prov) or 'version not recorded'})",
                subject=dep,
                evidence=tuple(sorted(paths)),
            )
        )
    if facts.no_deps_stage:
        for key, pkg in sorted(facts.locked.items()):
            if pkg.stage != facts.no_deps_stage or not pkg.requires:
                continue
            missing = sorted(
                {
                    canonicalize_name(r.name)
                    for r in facts.applicable_requires(key)
                    if canonicalize_name(r.name) not in facts.locked
                    and canonicalize_name(r.name) not in excluded
                }
            )
            if missing:
                out.append(
                    Finding(
                        id=GotchaId.G9,
                        status=Status.INFO,
                        summary=f"{key} {pkg.version} is installed --no-deps; not in the lock: "
                        f"{', '.join(missing)}",
                        subject=key,
                        evidence=tuple(missing),
                    )
                )
    # the base's real versions, a closed lock, old fallbacks: the same stage, judged below
    return [*out, *resolved_base(facts), *resolved_closure(facts), *resolved_fallback(facts)]


def _accepts(req: Requirement, version: str) -> bool:
    from packaging.version import InvalidVersion, Version

    try:
        return req.specifier.contains(Version(version), prereleases=True)
    except InvalidVersion:
        return False


def accepts(req_specifier: SpecifierSet, version: str) -> bool:
    """PEP 440 containment with pre-releases allowed: the base's version is what it is."""
    from packaging.version import InvalidVersion, Version

    try:
        return req_specifier.contains(Version(version), prereleases=True)
    except InvalidVersion:
        return False


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

    def path(e: Edge) -> str:
        return " → ".join(
            [*chain.get(e.source, [e.source]), f"{e.target} @ {e.req.url}" if e.req.url else _show(e)]
        )

    out: list[Finding] = []
    where = profile.image or profile.name
    for provider, group in sorted(bad.items()):
        base_v = profile.provides.get(provider, "")
        paths = sorted({path(e) for e in group}, key=len)
        sources = sorted({e.source for e in group})
        shown = "; ".join(paths[:4]) + (f"; … ({len(paths) - 4} more)" if len(paths) > 4 else "")
        out.append(
            Finding(
                id=GotchaId.G9,
                status=Status.FAIL,
                summary=f"{shown}: not met by the base's {provider} {base_v} ({where}, pre-releases count); "
                f"installed with pip, {'this replaces' if len(paths) == 1 else 'these replace'} the base's "
                f"{provider}",
                subject=provider,
                evidence=(*paths, f"base: {provider} {base_v}"),
                fix=f"pin {'a release' if len(sources) == 1 else 'releases'} of {', '.join(sources)} that "
                f"accept{'s' if len(sources) == 1 else ''} {provider} {base_v}, choose another profile "
                f"(`sparkenv profiles`), or replace the base's {provider} on purpose with --allow-replace "
                f"{provider} (recorded in the lock)",
            )
        )
    for provider, group in sorted(unknown.items()):
        paths = sorted({path(e) for e in group}, key=len)
        out.append(
            Finding(
                id=GotchaId.G9,
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
                Finding(
                    id=GotchaId.G9,
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
    return Finding(
        id=GotchaId.G9,
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
    failed = {bf.key for bf in facts.build_failures}  # G2 says why each is missing: not a second line
    edges = [e for e in facts.edges if e.target not in failed]
    gaps = unclosed(facts.versions, edges, facts.graph_chain, facts.profile, facts.allow_replace)
    known = all(p.requires is not None for p in facts.locked.values())
    if facts.locked and not gaps and known:
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
            Finding(
                id=GotchaId.G9,
                status=Status.WARN,
                summary=f"{fb.key} {fb.version} (via {via}) is a fallback: the newest release is "
                f"{fb.newest}{age}; why: {why}",
                subject=fb.key,
                evidence=(f"newest {fb.newest}", *fb.caps),
                fix=f"pin {fb.key} to the release you want, or choose a profile it has wheels for",
            )
        )
    return out


# ---------------------------------------------------------------------------------------------------
# Stage.LOCKFILE: the lock `sparkenv lock` writes (or not), and `sparkenv lock --check`


def lockfile(facts: LockFileFacts) -> list[Finding]:
    out = [_currency(c) for c in facts.checked]
    if facts.outcome is not None:
        out.append(_outcome(facts.outcome))
    return out


def _outcome(o: Outcome) -> Finding:
    """Whether the lock may be written: only when nothing failed and every file could be checked. PASS is
    the writer's go-ahead (resolve/run.py writes the files only then)."""
    if o.inputs_fail:
        summary = "not resolved and no lock written: the inputs fail the policy"
        return Finding(id=GotchaId.G9, status=Status.INFO, summary=summary, subject="lock")
    if o.unknown and not o.fails:
        # A file whose metadata is unknown has unchecked requirements: a failed lock, not a warning.
        return Finding(
            id=GotchaId.G9,
            status=Status.FAIL,
            summary=f"{o.pylock} not written: {o.unknown} file(s) could not be checked (see the ERROR lines)",
            subject="lock",
            fix="make every file's metadata readable, then lock again",
        )
    if o.fails or o.unknown:
        summary = f"{o.pylock} not written: the resolved set fails the policy"
        return Finding(id=GotchaId.G9, status=Status.INFO, summary=summary, subject="lock")
    what = f"{o.packages} packages, every one pinned with hashes ({o.stages} install stage(s))"
    if not o.packages:
        what = "nothing to lock beyond the base: every requirement is the base's"
    return Finding(
        id=GotchaId.G9,
        status=Status.PASS,
        summary=f"wrote {o.pylock} and {o.requirements}: {what}",
        subject=o.pylock,
        evidence=(o.requirements,),
    )


def _currency(c: Currency) -> Finding:
    """Is a written lock current with its inputs and profile (recorded hashes against today's)?"""
    if c.missing_input:
        return Finding(
            id=GotchaId.G9,
            status=Status.FAIL,
            summary=f"{c.pylock} records input {c.missing_input}, which no longer exists",
            subject=c.pylock,
            fix="run sparkenv lock again with the current inputs",
        )
    regen = (
        f"run sparkenv lock {' '.join(c.inputs)} --profile {c.profile} --output-dir {c.output_dir}"
        if c.profile
        else "run sparkenv lock INPUT… (this sparkenv's lock format)"
    )
    if not c.exists:
        summary = f"{c.pylock} does not exist"
        return Finding(id=GotchaId.G9, status=Status.FAIL, summary=summary, subject=c.pylock, fix=regen)
    problems = []
    if c.other_format:
        problems.append("written by another sparkenv lock format")
    if c.inputs_changed:
        problems.append(f"inputs changed since the lock ({', '.join(c.inputs)})")
    if c.profile_changed:
        problems.append(f"profile {c.profile} changed since the lock")
    if c.requirements_missing:
        problems.append(f"{c.requirements_missing} is missing")
    if problems:
        summary = f"{c.pylock} is stale: {'; '.join(problems)}"
        return Finding(id=GotchaId.G9, status=Status.FAIL, summary=summary, subject=c.pylock, fix=regen)
    return Finding(
        id=GotchaId.G9,
        status=Status.PASS,
        summary=f"{c.pylock} is current with {', '.join(c.inputs)} ({c.profile})",
        subject=c.pylock,
        evidence=(c.digest,),
    )


# ---------------------------------------------------------------------------------------------------
# Stage.IMAGE: the image being built, after the lock's install steps


def image(facts: BaseCheck) -> list[Finding]:
    """The base's packages against the lock's install steps (read inside the image by base_check.py)."""
    out = []
    for change in facts.moved:
        out.append(
            Finding(
                id=GotchaId.G9,
                status=Status.INFO,
                summary=f"a package of the base changed: {change.describe()}",
                subject=change.name,
            )
        )
    for change in facts.replaced:
        out.append(
            Finding(
                id=GotchaId.G9,
                status=Status.FAIL,
                summary=f"a package the base provides was replaced: {change.describe()}",
                subject=change.name,
                evidence=("/opt/sparkenv/base-packages.json",),
                fix="the lock must not carry what the base provides: re-lock with `sparkenv lock` for this "
                "profile, or drop these pins",
            )
        )
    if not facts.replaced:
        summary = f"the base's {len(facts.provided)} provided packages are untouched"
        out.append(Finding(id=GotchaId.G9, status=Status.PASS, summary=summary, subject="base"))
    return out


# ---------------------------------------------------------------------------------------------------
# Stage.INSTALLED: an environment read from outside (sparkenv audit)


def installed(facts: AuditFacts) -> list[Finding]:
    return [_container(facts), *_ngc(facts), *_drift(facts), *_requirements(facts)]


def _requirements(facts: AuditFacts) -> list[Finding]:
    """Everything pip check reports (and the extras it skips), WARN: see rules/requirements.py."""
    # Imported here: it pulls packaging.markers, .tags, sysconfig and logging, which the gate's start
    # (the live rules of this module) never needs.
    from sparkenv.rules import requirements

    broken, unparsed, checked = requirements.find(facts)
    out: list[Finding] = []
    by_requirer: dict[str, list[requirements.Broken]] = {}
    for b in broken:
        by_requirer.setdefault(b.requirer, []).append(b)
    base_pins = facts.ngc.pins
    for requirer, items in by_requirer.items():
        out.extend(_requirement_finding(requirer, b, base_pins.get(b.required) == b.installed) for b in items)
    for u in unparsed:
        out.append(
            Finding(
                id=GotchaId.G9,
                status=Status.WARN,
                summary=f"{u.requirer}: Requires-Dist {u.text!r} cannot be parsed ({u.reason}); not checked",
                subject=u.requirer,
                evidence=(str(facts.dists[u.requirer].dist.meta_dir / "METADATA"),),
                fix=None,
            )
        )
    if not broken:
        out.append(
            Finding(
                id=GotchaId.G9,
                status=Status.PASS,
                summary=f"requirements met: {checked} requirement(s) of {len(facts.dists)} distributions, "
                f"markers for {facts.target.machine} Python {facts.target.python_version or '?'} (what pip "
                "check checks, plus the extras asked for)",
                subject="requirements",
            )
        )
    return out


def _requirement_finding(requirer: str, b: requirements.Broken, from_base: bool) -> Finding:
    who = f"{requirer} {b.requirer_version}" + (f" (extra {b.via_extra})" if b.via_extra else "")
    req = b.requirement
    if b.missing:
        return Finding(
            id=GotchaId.G9,
            status=Status.WARN,
            summary=f"{who} requires {req}, which is not installed",
            subject=requirer,
            evidence=(f"Requires-Dist: {req}",),
            fix=f"pip install '{req}' (or uninstall {requirer} if nothing uses it)",
        )
    fix = f"pip install '{req}', or a {requirer} version that accepts {b.required} {b.installed}"
    if from_base:  # replacing what the NGC image built with is the worse problem (G9): keep it
        fix = (
            f"keep {b.required} {b.installed} (the NGC base pins it in /etc/pip/constraint.txt); install a "
            f"{requirer} version that accepts it, or --no-deps if {requirer} runs with it"
        )
    return Finding(
        id=GotchaId.G9,
        status=Status.WARN,
        summary=f"{who} requires {req}, but {b.required} {b.installed} is installed",
        subject=requirer,
        evidence=(f"Requires-Dist: {req}", f"installed: {b.required} {b.installed}"),
        fix=fix,
    )


def _container(facts: AuditFacts) -> Finding:
    c = facts.container
    if c.inside:
        return Finding(
            id=GotchaId.G9,
            status=Status.PASS,
            summary=f"inside a container ({'; '.join(c.markers)})",
            subject="container",
            evidence=c.markers,
        )
    return Finding(
        id=GotchaId.G9,
        status=Status.WARN,
        summary="no container marker found: if this is a bare pip environment, torch, triton, xformers and "
        "transformers drift independently",
        subject="container",
        evidence=tuple(f"checked {p}" for p in c.checked),
        fix=NO_CONTAINER_FIX,
    )


# No container marker, seen from outside (audit) or inside (gate): one fix for both.
NO_CONTAINER_FIX = (
    "run inside an NGC PyTorch container (sparkenv build makes one); if bare pip is unavoidable, pin with a "
    "lock and install the Unsloth family with --no-deps"
)


def ngc_torch(image: ngc.NgcFacts, torch_version: str) -> Finding:
    """Inside an NGC image, torch is NGC's own build or a pip install replaced it: the same finding for
    the audit and the gate."""
    markers = tuple(image.markers())
    if rules.ngc_release(torch_version):
        return Finding(
            id=GotchaId.G9,
            status=Status.PASS,
            summary=f"torch {torch_version} is the {image.describe()} build",
            subject="torch",
            evidence=markers,
        )
    pinned = image.pins.get("torch")
    return Finding(
        id=GotchaId.G9,
        status=Status.FAIL,
        summary=f"{image.describe()} detected but torch {torch_version} is not NGC's build: "
        "a pip install replaced it",
        subject="torch",
        evidence=(*markers, *([f"the image pinned torch=={pinned}"] if pinned else [])),
        fix="rebuild from the image and install other packages with --no-deps, or keep "
        "PIP_CONSTRAINT=/etc/pip/constraint.txt in effect",
    )


def _ngc(facts: AuditFacts) -> list[Finding]:
    n = facts.ngc
    if not n.detected:
        return []
    out: list[Finding] = []
    markers = tuple(n.markers())
    image = n.describe()
    torch = facts.dists.get("torch")
    if torch is None:
        out.append(
            Finding(
                id=GotchaId.G9,
                status=Status.FAIL,
                summary=f"{image} detected but torch is not installed in the target",
                subject="torch",
                evidence=markers,
                fix="audit the image's own environment, or rebuild from the image",
            )
        )
    else:
        out.append(ngc_torch(n, torch.dist.version))
    for key, pinned in sorted(n.pins.items()):
        df = facts.dists.get(key)
        if key == "torch" or df is None or df.dist.version == pinned:
            continue
        out.append(
            Finding(
                id=GotchaId.G9,
                status=Status.WARN,
                summary=f"{key} {df.dist.version} replaced the image's {key}=={pinned} ({n.constraint_file})",
                subject=key,
                evidence=markers,
                fix=f"pip install --no-deps '{key}=={pinned}', or rebuild from the image",
            )
        )
    return out


def _left_to_the_base(key: str, version: str, path: str, image: str | None, facts: AuditFacts) -> Finding:
    """The lock leaves `key` to the base on purpose (its [tool.sparkenv] excluded): the same advice as
    `sparkenv lock` gives, never "pin it in the lock"."""
    base = image or "the base image"
    if rules.ngc_release(version) or facts.ngc.pins.get(key) == version:
        return Finding(
            id=GotchaId.G9,
            status=Status.PASS,
            summary=f"{key} {version} is the base's, as {path} intends",
            subject=key,
            evidence=(path,),
        )
    return Finding(
        id=GotchaId.G9,
        status=Status.WARN,
        summary=f"{key} {version} is not the base's build: {path} leaves {key} to {base} on purpose",
        subject=key,
        evidence=(f"{path}: [tool.sparkenv] excluded lists {key}",),
        fix=f"rebuild from {base} (sparkenv build) and do not install {key} with pip; the lock keeps it "
        "out on purpose",
    )


def _drift(facts: AuditFacts) -> list[Finding]:
    installed = [facts.dists[k] for k in packages().drift_prone if k in facts.dists]
    if facts.lock is None:
        if not installed:
            return []
        versions = ", ".join(f"{d.dist.key} {d.dist.version}" for d in installed)
        return [
            Finding(
                id=GotchaId.G9,
                status=Status.INFO,
                summary=f"no --lock given: {versions} not compared with a lock",
                subject="lock",
                evidence=(),
                fix=None,
            )
        ]
    out: list[Finding] = []
    lock = facts.lock
    for df in installed:
        key, version = df.dist.key, df.dist.version
        src = f"lock {lock.path}"
        if key not in lock.pins and key in lock.excluded:
            out.append(_left_to_the_base(key, version, lock.path, lock.image, facts))
            continue
        if key not in lock.pins:
            if rules.ngc_release(version) or facts.ngc.pins.get(key) == version:
                out.append(
                    Finding(
                        id=GotchaId.G9,
                        status=Status.PASS,
                        summary=f"{key} {version} is provided by the NGC base, not the lock",
                        subject=key,
                        evidence=(src,),
                    )
                )
            else:
                out.append(
                    Finding(
                        id=GotchaId.G9,
                        status=Status.WARN,
                        summary=f"{key} {version} is installed but not pinned in {lock.path}",
                        subject=key,
                        evidence=(src,),
                        fix=f"pin {key}=={version} in the lock (sparkenv lock)",
                    )
                )
            continue
        pinned = lock.pins[key]
        if pinned is None:
            out.append(
                Finding(
                    id=GotchaId.G9,
                    status=Status.WARN,
                    summary=f"{key} {version}: {lock.path} lists it without an exact pin",
                    subject=key,
                    evidence=(src,),
                    fix=f"pin {key}=={version} exactly",
                )
            )
        elif pinned != version:
            out.append(
                Finding(
                    id=GotchaId.G9,
                    status=Status.WARN,
                    summary=f"{key} drifted: {lock.path} pins {pinned}, {version} is installed",
                    subject=key,
                    evidence=(src,),
                    fix=f"pip install --no-deps '{key}=={pinned}', or re-lock",
                )
            )
        else:
            out.append(
                Finding(
                    id=GotchaId.G9,
                    status=Status.PASS,
                    summary=f"{key} {version} matches {lock.path}",
                    subject=key,
                    evidence=(src,),
                )
            )
    return out


# ---------------------------------------------------------------------------------------------------
# Stage.LIVE: the running machine (sparkenv gate)


def live(f: GateFacts) -> list[Finding]:
    out = []
    err = f.error_finding(GotchaId.G9, "container", "container")
    if err:
        out.append(err)
    else:
        markers = (f.section("container") or {}).get("markers") or []
        if markers:
            out.append(
                Finding(
                    id=GotchaId.G9,
                    status=Status.PASS,
                    summary=f"inside a container ({'; '.join(markers)})",
                    subject="container",
                    evidence=tuple(markers),
                )
            )
        else:
            out.append(
                Finding(
                    id=GotchaId.G9,
                    status=Status.WARN,
                    summary="no container marker found (unknown, not necessarily bare host): "
                    "a bare pip environment drifts",
                    subject="container",
                    evidence=(),
                    fix=NO_CONTAINER_FIX,
                )
            )
    image = ngc.from_snapshot(f.env, (f.section("container") or {}).get("ngc"))
    torch_version = (f.torch or {}).get("version") or f.dists.get("torch")
    if image.detected and torch_version:
        out.append(ngc_torch(image, str(torch_version)))
    # Triton's ptxas is G7's to judge (g7.judge_triton_ptxas) wherever its facts were read; only
    # without them is the unset variable worth a line here: one judgement per fact.
    judged_by_g7 = bool((f.section("kernel_coverage") or {}).get("triton"))
    if any(k in f.dists for k in ("triton", "pytorch-triton")) and not judged_by_g7:
        ptxas = f.env.get("TRITON_PTXAS_PATH")
        if ptxas:
            out.append(
                Finding(
                    id=GotchaId.G9,
                    status=Status.PASS,
                    summary=f"TRITON_PTXAS_PATH={ptxas}",
                    subject="TRITON_PTXAS_PATH",
                )
            )
        else:
            status = Status.WARN if f.is_gb10 else Status.INFO
            out.append(
                Finding(
                    id=GotchaId.G9,
                    status=status,
                    summary="Triton is installed and TRITON_PTXAS_PATH is unset: its bundled ptxas "
                    "may predate CUDA 13 and reject sm_121a",
                    subject="TRITON_PTXAS_PATH",
                    evidence=(),
                    fix="export TRITON_PTXAS_PATH=/usr/local/cuda/bin/ptxas (NGC images set it)",
                )
            )
    return out


RULES = (
    Rule(
        Stage.DECLARED,
        declared,
        "pins on what the profile's base provides, drift-prone packages (torch, triton, xformers, "
        "transformers) pinned exactly or not, the Unsloth family in a --no-deps stage or not",
    ),
    Rule(
        Stage.RESOLVED,
        resolved,
        "resolved packages the base provides, drift-prone packages pinned in the lock; every "
        "Requires-Dist in the resolved graph (markers for the target, extras followed) against the base's "
        "exact versions and the locked ones (a closed lock); declared requirements not pinned exactly and "
        "sdist-only picks against the newest release on the index (fallbacks)",
    ),
    Rule(
        Stage.LOCKFILE,
        lockfile,
        "the findings of the declared and resolved rules (the lock is written only when none fails and "
        "every file's metadata was read); under --check, each written lock's recorded input and profile "
        "hashes, format and hashed requirements file against the inputs and profile as they are now",
    ),
    Rule(
        Stage.IMAGE,
        image,
        "every distribution of the base before and after the lock's install steps, read inside the "
        "image (base_check.py): a package the profile says the base provides replaced or removed",
    ),
    Rule(
        Stage.INSTALLED,
        installed,
        "container markers, $NVIDIA_PYTORCH_VERSION and /etc/pip/constraint.txt against the installed "
        "torch and the image's pins, drift-prone packages against --lock, every distribution's "
        "Requires-Dist against what is installed (pip check, plus the extras asked for)",
    ),
    Rule(
        Stage.LIVE,
        live,
        "container markers, $NVIDIA_PYTORCH_VERSION and /etc/pip/constraint.txt against the running "
        "torch, TRITON_PTXAS_PATH next to Triton",
    ),
)

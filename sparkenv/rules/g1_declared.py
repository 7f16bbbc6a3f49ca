"""G1 at Stage.DECLARED and Stage.RESOLVED: what a name, a +cu/+cpu label, an exact pin, an index or
wheel URL and a Requires-Dist say about the CUDA major (sparkenv check, sparkenv lock). `fix_for` is the
one fix text every stage gives for the same evidence."""

from __future__ import annotations

import dataclasses
from functools import partial
from typing import TYPE_CHECKING

from packaging.version import Version

from sparkenv.core.report import Finding, GotchaId, Status
from sparkenv.cuda import rules
from sparkenv.knowledge import packages
from sparkenv.rules import counterparts, cuda_major

if TYPE_CHECKING:
    from sparkenv.environment.profiles import Profile
    from sparkenv.facts.declared import Declared, DeclaredFacts
    from sparkenv.facts.resolved import ResolvedFacts


_finding = partial(Finding, GotchaId.G1)  # every finding of this module is G1's
_TORCH_FAMILY = {"torch", "torchvision", "torchaudio"}


def _cuda_fail(
    key: str,
    version: str | None,
    subject_desc: str,
    evidence: tuple[str, ...],
    on_base: bool = False,
    extras: frozenset[str] = frozenset(),
) -> list[Finding]:
    """G1 from what a name, an extra or a version says: -cu12/-cuda120/-cu126 names, [cuda12]/[cu12]
    extras, +cu128/+cpu labels, versioned toolkit wheels."""
    out: list[Finding] = []
    target = rules.target_major()
    for e in cuda_major.name_version_evidence(key, version, extras):
        if e.kind == "cpu":
            summary = f"{subject_desc} is a CPU-only build (+cpu): no CUDA at all"
        elif e.major is None or e.major == target:
            continue
        elif e.kind == "name":
            summary = f"{subject_desc} is built for CUDA {e.major} (name) — target is CUDA {target}"
        elif e.kind == "extra":
            summary = f"{subject_desc}: {e.text} — target is CUDA {target}"
        elif e.kind == "label":
            summary = f"{subject_desc} is a CUDA {e.major} build (+cu label) — target is CUDA {target}"
        elif e.kind == "pin":
            summary = (
                f"{subject_desc} is CUDA {e.major}'s (its version is the CUDA version) — "
                f"target is CUDA {target}"
            )
        else:  # an NGC build of a release on another CUDA major
            summary = f"{subject_desc}: {e.text} — target is CUDA {target}"
        out.append(
            _finding(
                status=cuda_major.CPU_ONLY if e.kind == "cpu" else cuda_major.OTHER_MAJOR,
                summary=summary,
                subject=key,
                evidence=evidence,
                fix=_extra_fix(key, e.major) if e.kind == "extra" else fix_for(key, e.kind, on_base),
            )
        )
    return out


def _extra_fix(key: str, major: int | None) -> str:
    """An extra that asks for another CUDA major: what the extra is called for CUDA 13 is the package's
    own word, not a suffix to swap."""
    target = rules.target_major()
    return (
        f"drop the CUDA {major} extra of {key}; ask for its CUDA {target} extra where {key} offers one "
        f"(see its install guide), then `sparkenv lock` resolves what it installs"
    )


def fix_for(key: str, kind: str, on_base: bool = False) -> str:
    """The fix for a package bound to another CUDA major (or to none), by the kind of the evidence: one
    text for every stage that sees the same evidence (check, lock, audit). `on_base`: the profile in use
    is already an NGC image, so "use the NGC image" is no way out."""
    ngc = "" if on_base else " or use the NGC image"
    if key in _TORCH_FAMILY or kind == "cpu":
        return f"install the CUDA {rules.target_major()} build from {packages().cuda13_index}{ngc}"
    if counterparts.family(key) is not None or rules.name_match(key):
        return counterparts.fix(key, rules.target_major(), ngc)
    if kind == "pin":
        return f"use {key} {rules.target_major()}.x{',' if ngc else ''}{ngc}"
    if kind == "ngc":
        target = rules.target_major()
        first = rules.first_ngc_release(target)
        return f"use an NGC release on CUDA {target}" + (f" ({first} or later)" if first else "")
    target = rules.target_major()
    if kind != "label":  # only a +cuNNN build comes from PyTorch's index: the others are sent nowhere made up
        return counterparts.fix(key, target, ngc)
    return (
        f"install a CUDA {target} build (from {packages().cuda13_index} where it has one, or a newer version "
        f"with a CUDA {target} wheel){ngc}"
    )


def _cuda_pass(key: str, version: str | None, subject_desc: str, evidence: tuple[str, ...]) -> list[Finding]:
    target = rules.target_major()
    majors = [e.major for e in cuda_major.name_version_evidence(key, version) if e.major is not None]
    if majors and majors[0] == target:
        return [
            _finding(
                status=Status.PASS,
                summary=f"{subject_desc} is built for CUDA {target}",
                subject=key,
                evidence=evidence,
            )
        ]
    return []


def declared(facts: DeclaredFacts) -> list[Finding]:
    profile = facts.profile
    target = rules.target_major()
    out: list[Finding] = []
    for url in facts.index_urls:
        label = rules.index_label(url)
        if label is None:
            continue
        major = rules.label_cuda_major(label)
        if rules.is_cpu_label(label) or (major is not None and major != target):
            what = "CPU-only" if rules.is_cpu_label(label) else f"CUDA {major}"
            out.append(
                _finding(
                    status=Status.FAIL,
                    summary=f"index {url} serves {what} builds — target is CUDA {target}",
                    subject=url,
                    fix=f"use {packages().cuda13_index} (or leave torch to the NGC base)",
                )
            )
    for d in facts.applicable:
        out += _declared_one(d, profile)
    out.append(
        _finding(
            status=Status.INFO,
            summary=f"checked {facts.counted} requirement(s) for {profile.describe()}; {facts.skipped} do "
            f"not apply on {profile.machine} (markers evaluated for the target, not this host)",
            subject="inputs",
        )
    )
    return out


def _declared_one(d: Declared, profile: Profile) -> list[Finding]:

    key = d.key
    assert key is not None
    ev = (d.where,)
    desc = f"{key}{d.specifier}" if str(d.specifier) else key
    provider = profile.provider(key) if not d.url else None
    # what the base provides is kept out of resolution with its extras (G9 says so): the base's build stands
    extras = d.extras if provider is None else frozenset()
    desc = f"{key}[{','.join(sorted(extras))}]{d.specifier}" if extras else desc
    out = _cuda_fail(key, d.exact, f"{desc} ({d.where})", ev, bool(profile.image), extras)
    if provider is not None and str(d.specifier):
        # G9 fails the same pin for replacing the base's build, which is the target's CUDA: one fix for both

        from sparkenv.rules.g9_declared import base_pin_fix

        out = [dataclasses.replace(f, fix=base_pin_fix(provider)) if f.fix else f for f in out]
    if d.url and d.url.endswith(".whl"):
        out += _url_wheel(d, profile)
    if not out:
        out += _cuda_pass(key, d.exact, f"{desc} ({d.where})", ev)
    first = packages().first_cuda13(key, profile.machine) if key == "torch" else None
    if first is not None and d.exact and not d.url and profile.provider(key) is None:
        v = Version(d.exact)
        if not v.local and v < Version(first.version):
            out.append(
                _finding(
                    status=Status.WARN,
                    summary=f"{desc} ({d.where}): an unlabelled pin below {first.version} matches builds "
                    f"without CUDA 13: the default index's {profile.machine} wheels before {first.version} "
                    f"carry {first.before} (=={d.exact} also matches labelled builds such as "
                    f"{d.exact}+cu128); `sparkenv lock` reads the file it "
                    "resolves to and fails a CPU-only or CUDA 12 build",
                    subject=key,
                    evidence=(*ev, f"{first.evidence} (read {first.checked}; {first.source})"),
                    fix=f"pin torch>={first.version} (the default index's {profile.machine} wheels carry "
                    f"CUDA 13 from {first.version} on), or the +cu130 build from {packages().cuda13_index}",
                )
            )
    return out


def _url_wheel(d: Declared, profile: Profile) -> list[Finding]:
    from packaging.utils import InvalidWheelFilename, parse_wheel_filename

    assert d.url is not None and d.key is not None
    fname = d.url.rsplit("/", 1)[-1].split("#")[0]
    try:
        _, version, _, tags = parse_wheel_filename(fname)
    except InvalidWheelFilename:
        return []
    out = _cuda_fail(
        d.key, str(version), f"{d.key} @ {fname} ({d.where})", (d.where, d.url), bool(profile.image)
    )
    machines = {t.platform for t in tags}
    if "any" not in machines and not any(p.endswith(profile.machine) for p in machines):
        out.append(
            _finding(
                status=Status.FAIL,
                summary=f"{d.key} @ {fname} ({d.where}) is built for {', '.join(sorted(machines))}, not "
                f"{profile.machine}",
                subject=d.key,
                evidence=(d.where, d.url),
                fix=f"use a wheel built for {profile.machine}",
            )
        )
    return out


def resolved(facts: ResolvedFacts) -> list[Finding]:
    from packaging.utils import canonicalize_name

    target = rules.target_major()
    out: list[Finding] = []
    for key, pkg in sorted(facts.locked.items()):
        ev = facts.evidence(key)
        desc = facts.describe(key)
        fails = _cuda_fail(key, pkg.version, desc, ev, bool(facts.profile.image))
        for req in facts.applicable_requires(key):
            dep = canonicalize_name(req.name)
            if dep in facts.locked:
                continue  # judged as itself, with its chain
            major = cuda_major.requirement_major(dep, str(req.specifier), req.extras)
            if major is not None and major != target:
                fails.append(
                    _finding(
                        status=Status.FAIL,
                        summary=f"{desc} requires {req} (CUDA {major}) — target is CUDA {target}",
                        subject=key,
                        evidence=ev,
                        fix=f"pick a {key} build for CUDA {target}",
                    )
                )
        out += fails or _cuda_pass(key, pkg.version, desc, ev)
    return out + resolved_cpu_only(facts)


def resolved_cpu_only(facts: ResolvedFacts) -> list[Finding]:
    """A CUDA-capable family member (torch …) resolved to a build with no CUDA at all for the target:
    FAIL on a GPU profile, with where a CUDA 13 build comes from; PASS with the evidence otherwise."""
    from sparkenv.rules import cuda_builds

    versions = facts.versions
    verdicts = cuda_builds.evidence(versions, list(facts.edges), facts.base_versions)
    for key, record in facts.records.items():
        if verdicts.get(key, "") is None:
            verdicts[key] = cuda_builds.record_evidence(key, record)
    ties = cuda_builds.exact_ties(list(facts.edges))
    chain = facts.graph_chain
    files = {k: (p.wheels or [p.sdist or ""])[0] for k, p in facts.locked.items()}
    profile_desc = facts.profile.python_platform
    out = []
    fams = cuda_builds.families()
    cpu_only = {k for k, why in verdicts.items() if why is None and fams[k].conclusive}
    for key, why in sorted(verdicts.items()):
        if why is None and rules.is_cpu_label(versions[key]):
            continue  # a +cpu label: resolved() said it, in the words every stage uses for that label
        via = " → ".join(chain.get(key, [key]))
        desc = f"{key} {versions[key]} (via {via})"
        ev = (files.get(key, ""), f"via {via}")
        tied = sorted(t for t in ties.get(key, ()) if t in cpu_only)
        if why is None and not fams[key].conclusive:
            if tied:
                out.append(
                    _finding(
                        status=Status.FAIL,
                        summary=f"{desc} is pinned to {tied[0]} {versions[tied[0]]}, a CPU-only build",
                        subject=key,
                        evidence=ev,
                        fix=f"use {cuda_builds.instead(key, facts.profile.machine)}",
                    )
                )
            continue  # its CUDA comes from torch's libraries: nothing to tell from its own metadata
        if why is None:
            out.append(
                _finding(
                    status=Status.FAIL,
                    summary=f"{desc} is a CPU-only build for {profile_desc}: no CUDA label, no CUDA runtime "
                    "among its Requires-Dist, no CUDA library in its RECORD — on a Spark it runs on the CPU",
                    subject=key,
                    evidence=ev,
                    fix=f"use {cuda_builds.instead(key, facts.profile.machine)}",
                )
            )
        else:
            out.append(
                _finding(
                    status=Status.PASS,
                    summary=f"{desc} is a CUDA build: {why}",
                    subject=key,
                    evidence=ev,
                )
            )
    return out


# ---------------------------------------------------------------------------------------------------
# Stage.INSTALLED: an environment read from outside (sparkenv audit)

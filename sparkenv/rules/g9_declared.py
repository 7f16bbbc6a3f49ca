"""G9 at Stage.DECLARED: the project's inputs (sparkenv check, sparkenv lock): pins that would replace
what the base provides, drift-prone packages not pinned exactly, the Unsloth family installed with its
dependencies."""

from __future__ import annotations

from functools import partial
from typing import TYPE_CHECKING

from sparkenv.core.redact import excerpt
from sparkenv.core.report import Finding, GotchaId, Status
from sparkenv.knowledge import packages
from sparkenv.rules import data_age, unsloth
from sparkenv.rules.replaced import replaced_on_purpose

if TYPE_CHECKING:
    from sparkenv.environment.profiles import Profile
    from sparkenv.facts.declared import Declared, DeclaredFacts

_finding = partial(Finding, GotchaId.G9)  # every finding of this module is G9's


def declared(facts: DeclaredFacts) -> list[Finding]:
    return [
        *replaced_on_purpose(_declared(facts), facts.allow_replace),
        *data_age.profile(GotchaId.G9, facts.profile),
    ]


def _from_source(facts: DeclaredFacts) -> list[Finding]:
    """Editable, VCS and local-path lines: their version and requirements are known only once built, so
    before install they are judged by name where they have one, and said, never dropped silently."""
    env = facts.profile.marker_env()
    out = []
    for d in facts.declared:
        if d.constraint or not (d.url or d.editable) or not d.applies(env):
            continue
        scheme = (d.url or "").split(":", 1)[0]
        kind = "an editable" if d.editable else ("a VCS" if "+" in scheme else "a path/URL")
        judged = f"judged by its name {d.key} only" if d.key else "it has no name: nothing about it is judged"
        out.append(
            _finding(
                status=Status.INFO,
                summary=f"{excerpt(d.text)} ({d.where}) is {kind} requirement: its version and requirements "
                f"are known only once it is built; {judged} before install (`sparkenv lock` reads what it "
                "builds)",
                subject=d.key or excerpt(d.text),  # a stranger's line: bounded, redacted
                evidence=(d.where,),
            )
        )
    return out


def _declared(facts: DeclaredFacts) -> list[Finding]:
    profile, staged = facts.profile, facts.staged
    compiles = packages().compiles_cuda
    out: list[Finding] = _from_source(facts)
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
                out.append(_finding(status=Status.PASS, summary=pinned, subject=key, evidence=ev))
            else:
                out.append(
                    _finding(
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
            _finding(
                status=Status.INFO,
                summary="offline, check sees the declared requirements only: what their dependencies ask "
                "of the base's versions, CPU-only builds, what a --no-deps stage misses and old fallbacks "
                "need the index; `sparkenv lock` decides those",
                subject="resolution",
            )
        )
    return out


def _base_provided(d: Declared, profile: Profile, provider: str) -> list[Finding]:
    key = d.key
    assert key is not None
    base_v = profile.provides[provider]
    ev = (d.where,)
    name = f"{provider} {base_v}" if base_v else provider
    if d.url:
        return [
            _finding(
                status=Status.FAIL,
                summary=f"{key} @ {d.url} ({d.where}) would replace the base's {name}",
                subject=key,
                evidence=ev,
                fix=f"drop it: {profile.image} provides {provider}",
            )
        ]
    if not str(d.specifier) or (base_v and d.specifier.contains(base_v, prereleases=True)):
        return [
            _finding(
                status=Status.PASS,
                summary=f"{key}{d.specifier} is provided by the base ({name}); excluded from resolution",
                subject=key,
                evidence=ev,
            )
        ]
    if not base_v:
        return [
            _finding(
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
        _finding(
            status=Status.FAIL,
            summary=f"{key}{d.specifier} ({d.where}) would replace the base's {name}",
            subject=key,
            evidence=ev,
            fix=base_pin_fix(provider),
        )
    ]


def base_pin_fix(provider: str) -> str:
    """The fix for a pin on what the base provides, that G1 gives too when the pin is a build for another
    CUDA major (torch==…+cu128 on an NGC base): one fix for the subject, since installing the CUDA 13
    build instead would still replace the base's."""
    return (
        f"drop the pin (the base's {provider} is kept out of resolution), or pick a profile whose base has it"
    )


def _declared_unsloth(d: Declared, profile: Profile, staged: bool) -> Finding:
    key = d.key
    assert key is not None
    ev = (d.where,)
    if staged:
        return _finding(
            status=Status.PASS,
            summary=f"{key} goes into its own --no-deps stage after the rest, as `sparkenv lock` installs "
            "it (a plain pip install -r of this file would not: `sparkenv check --pip`)",
            subject=key,
            evidence=ev,
        )
    if d.no_deps:
        return _finding(
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
    return _finding(
        status=status,
        summary=f"{key} ({d.where}) is installed with its dependencies: {why}",
        subject=key,
        evidence=ev,
        fix="install the Unsloth family in a second stage with pip install --no-deps (mark that file "
        "`# sparkenv: no-deps`), or install from the lock `sparkenv lock` writes",
    )

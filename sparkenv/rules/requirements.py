"""Which installed distributions' requirements are unmet: what `pip check` reports, read from outside
(pure: the facts the audit gathered). rules/g9.py judges them.

As pip check: Requires-Dist markers are evaluated for the audited environment (not this host), a
requirement on a missing distribution is "missing", a version outside the specifier (pre-releases
allowed) a "conflict". Beyond pip check, requested extras count: `A requires B[x]` checks B's
`extra == "x"` requirements.

Severity is WARN (`--strict` fails), not FAIL: a FAIL leaves a build's image untagged, and broken
requirements are common in images that run (NGC bases ship some, Unsloth's stack is installed with
--no-deps on purpose, a base may provide a distribution under another name).
"""

from __future__ import annotations

import functools
import operator
import re
from dataclasses import dataclass
from typing import TYPE_CHECKING

from packaging.markers import Marker
from packaging.requirements import InvalidRequirement, Requirement
from packaging.utils import canonicalize_name
from packaging.version import InvalidVersion, Version

from sparkenv.environment import markers
from sparkenv.environment.markers import applies
from sparkenv.environment.target import pyvenv_full_version

if TYPE_CHECKING:
    from sparkenv.environment.distributions import Distribution
    from sparkenv.environment.target import Target
    from sparkenv.facts.installed import AuditFacts


@dataclass(frozen=True)
class Broken:
    requirer: str  # normalized name
    requirer_version: str
    requirement: str  # without its marker, names normalized
    required: str  # normalized name of what is required
    installed: str | None  # version installed, None when missing
    via_extra: str = ""  # the requirer's extra that brought the requirement ("" for its base)

    @property
    def missing(self) -> bool:
        return self.installed is None


@dataclass(frozen=True)
class Unparsed:
    requirer: str
    text: str
    reason: str


def marker_env(target: Target) -> dict[str, str]:
    """The audited environment's markers (the one marker classifier), with its full Python version from
    pyvenv.cfg when it has one."""
    return markers.marker_environment(target.machine, _full_version(target) or target.python_version)


def _full_version(target: Target) -> str | None:
    if target.interpreter is None:
        return None
    return pyvenv_full_version(target.interpreter.parent.parent)


_NAME = r"[A-Za-z0-9](?:[A-Za-z0-9._-]*[A-Za-z0-9])?"
_SPEC = r"(?:(?:==|!=)\s*\d+(?:\.\d+)*(?:\.\*)?|(?:>=|<=|>|<)\s*\d+(?:\.\d+)*|~=\s*\d+(?:\.\d+)+)"
# `name[extras] specifiers ; extra == "x"` in a spelling PEP 508 certainly accepts (plain release
# numbers only; anything else does not match and is parsed). Such a requirement never holds for a
# distribution asked for without extras: the base pass skips it unparsed — most of a large venv's
# Requires-Dist (test, docs, optional backends), whose parsing was most of a first audit's check.
_EXTRA_ONLY = re.compile(
    rf"""\s*{_NAME}\s*(?:\[\s*{_NAME}(?:\s*,\s*{_NAME})*\s*\])?\s*(?:{_SPEC}(?:\s*,\s*{_SPEC})*)?"""
    rf"""\s*;\s*extra\s*==\s*(["']){_NAME}\1\s*"""
)


def extra_only(text: str) -> bool:
    """Whether `text` is a valid requirement whose only marker is `extra == "..."` (see _EXTRA_ONLY)."""
    return _EXTRA_ONLY.fullmatch(text) is not None


@functools.lru_cache(maxsize=8192)
def _parse(text: str) -> Requirement | str:
    try:
        return Requirement(text)
    except InvalidRequirement as exc:
        return str(exc).splitlines()[0]


@functools.lru_cache(maxsize=1024)
def _version(text: str) -> Version | None:
    try:
        return Version(text)
    except InvalidVersion:
        return None


class _Markers:
    """Marker results cached by (marker text, extra): a large venv repeats the same few markers."""

    def __init__(self, env: dict[str, str]) -> None:
        self.env = env
        self.cache: dict[tuple[str, str], bool] = {}
        # A marker's text, by the marker object: formatting a marker costs more than evaluating it
        # (7,700 str() calls were a third of a first audit's requirement check). Each object is kept
        # with its text, so an id is never reused while it is a key here.
        self.texts: dict[int, tuple[Marker, str]] = {}

    def applies(self, marker: Marker | None, extra: str) -> bool:
        if marker is None:
            return True
        known = self.texts.get(id(marker))
        if known is None:
            known = self.texts[id(marker)] = (marker, str(marker))
        key = (known[1], extra)
        hit = self.cache.get(key)
        if hit is None:
            hit = applies(marker, self.env, (extra,))
            self.cache[key] = hit
        return hit


Found = tuple[list[Broken], list[Unparsed], int]
# The last check's input and answer: the audit checks while its workers still read shared objects
# (audit/scan.py), then the G9 rule and the report's context ask again for the same facts. The input is
# compared by identity (a Target and Distributions are frozen), so a different environment is checked.
_last: list[tuple[Target, tuple[Distribution, ...], Found]] = []


def find(facts: AuditFacts) -> Found:
    """(broken requirements, unparseable Requires-Dist values, requirements checked)."""
    return check(facts.target, {k: df.dist for k, df in facts.dists.items()})


def check(target: Target, dists: dict[str, Distribution]) -> Found:
    """find() for the distributions by normalized name (the first on the path of each)."""
    seen = tuple(dists.values())
    if _last:
        was_target, was_dists, found = _last[0]
        if was_target is target and len(was_dists) == len(seen) and all(map(operator.is_, was_dists, seen)):
            return found
    found = _check(target, dists)
    _last[:] = [(target, seen, found)]
    return found


def _check(target: Target, dists: dict[str, Distribution]) -> Found:
    env = _Markers(marker_env(target))
    broken: list[Broken] = []
    unparsed: list[Unparsed] = []
    checked = 0
    # (distribution, extra) pairs to check: every distribution's base, then the extras others ask for.
    todo: list[tuple[str, str]] = [(k, "") for k in dists]
    seen = set(todo)
    while todo:
        key, extra = todo.pop()
        dist = dists[key]
        for text in dist.requires:
            if not extra and extra_only(text):
                continue  # holds only when an extra is asked for; valid, so never "unparsed"
            req = _parse(text)
            if isinstance(req, str):
                if not extra:
                    unparsed.append(Unparsed(key, text, req))
                continue
            if not env.applies(req.marker, extra):
                continue
            if extra and env.applies(req.marker, ""):
                continue  # part of the base, already checked
            checked += 1
            name = canonicalize_name(req.name)
            have = dists.get(name)
            spec = _spelled(req)
            if have is None:
                broken.append(Broken(key, dist.version, spec, name, None, extra))
                continue
            if req.specifier and not _satisfies(req, have.version):
                broken.append(Broken(key, dist.version, spec, name, have.version, extra))
            for wanted in sorted(canonicalize_name(e) for e in req.extras):
                if (name, wanted) not in seen:
                    seen.add((name, wanted))
                    todo.append((name, wanted))
    broken.sort(key=lambda b: (b.requirer, b.via_extra, b.required))
    return broken, unparsed, checked


def _satisfies(req: Requirement, version: str) -> bool:
    parsed = _version(version)
    if parsed is None:
        return True  # a legacy version pip cannot order either: not a finding
    return req.specifier.contains(parsed, prereleases=True)


def _spelled(req: Requirement) -> str:
    """The requirement with its names normalized (huggingface_hub and huggingface-hub are one project,
    said once one way), without its marker."""
    extras = f"[{','.join(sorted(canonicalize_name(e) for e in req.extras))}]" if req.extras else ""
    name = canonicalize_name(req.name)
    if req.url:
        return f"{name}{extras} @ {req.url}"
    return f"{name}{extras}{req.specifier}"


def grouped(broken: list[Broken]) -> list[dict[str, object]]:
    """The broken requirements per distribution that requires them (the JSON report's context), each
    distribution once with its problems in order."""
    out: dict[str, dict[str, object]] = {}
    for b in broken:
        entry = out.setdefault(
            b.requirer, {"distribution": b.requirer, "version": b.requirer_version, "problems": []}
        )
        problems = entry["problems"]
        assert isinstance(problems, list)
        problems.append(
            {
                "requirement": b.requirement,
                "required": b.required,
                "installed": b.installed,
                "extra": b.via_extra or None,
            }
        )
    return list(out.values())

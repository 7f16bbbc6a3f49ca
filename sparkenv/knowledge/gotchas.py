"""data/gotchas.toml: the G1–G10 catalog that `sparkenv explain` prints (every one of the ten)."""

from __future__ import annotations

import functools
from collections.abc import Mapping
from dataclasses import dataclass
from types import MappingProxyType

from sparkenv import datafiles
from sparkenv.knowledge.schema import KnowledgeError, build
from sparkenv.report import GotchaId


@dataclass(frozen=True)
class GotchaText:
    title: str
    symptom: str
    cause: str
    fix: str


@functools.cache
def gotchas() -> Mapping[GotchaId, GotchaText]:
    """G1 … G10 in order; a gotcha missing from the file is a KnowledgeError, like a missing key."""
    found = build(Mapping[GotchaId, GotchaText], datafiles.load("gotchas"), "gotchas")
    missing = [g.value for g in GotchaId if g not in found]
    if missing:
        raise KnowledgeError(f"sparkenv/data/gotchas.toml: {missing[0]} is missing")
    return MappingProxyType({g: found[g] for g in GotchaId})

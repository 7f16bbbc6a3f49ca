"""data/gotchas.toml: the G1–G10 catalog that `sparkenv explain` prints (every one of the ten)."""

from collections.abc import Mapping
from types import MappingProxyType
from typing import Any, NamedTuple

from sparkenv.core.report import GotchaId
from sparkenv.knowledge.schema import KnowledgeError, build


class GotchaText(NamedTuple):
    title: str
    symptom: str
    cause: str
    fix: str


def parse(data: dict[str, Any]) -> Mapping[GotchaId, GotchaText]:
    """G1 … G10 in order, or one KnowledgeError naming the file and the key (a missing gotcha too)."""
    data = {k: v for k, v in data.items() if k != "reviewed"}  # the file's date, beside G1 … G10
    found = build(Mapping[GotchaId, GotchaText], data, "gotchas")
    missing = [g.value for g in GotchaId if g not in found]
    if missing:
        raise KnowledgeError(f"sparkenv/data/gotchas.toml: {missing[0]} is missing")
    return MappingProxyType({g: found[g] for g in GotchaId})

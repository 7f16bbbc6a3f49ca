"""The requirement graph of a resolved set: which Requires-Dist apply on the target, extras followed.

A requirement applies when its marker holds in the target's environment with no extra, or with one of
the extras some edge (or a declared requirement) asks of its package. Extras are followed to a fixed
point: `unsloth[huggingface]` turns on unsloth's `extra == "huggingface"` lines, and those may ask
further extras.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from dataclasses import dataclass

from packaging.requirements import Requirement
from packaging.utils import canonicalize_name

from sparkenv.environment.markers import applies


@dataclass(frozen=True)
class Edge:
    source: str  # normalized name of the package that requires
    req: Requirement

    @property
    def target(self) -> str:
        return canonicalize_name(self.req.name)


def _applies(req: Requirement, env: dict[str, str], extras: set[str]) -> bool:
    return applies(req.marker, env, ("", *sorted(extras)))


def edges(
    requires: dict[str, list[Requirement]],
    env: dict[str, str],
    root_extras: dict[str, set[str]] | None = None,
) -> list[Edge]:
    """Every requirement that applies on the target; `requires` maps a package to its Requires-Dist."""
    extras: dict[str, set[str]] = {k: set(v) for k, v in (root_extras or {}).items()}
    while True:
        out = [
            Edge(src, req)
            for src, reqs in requires.items()
            for req in reqs
            if _applies(req, env, extras.get(src, set()))
        ]
        grown = False
        for e in out:
            wanted = {canonicalize_name(x) for x in e.req.extras}
            have = extras.setdefault(e.target, set())
            if not wanted <= have:
                have |= wanted
                grown = True
        if not grown:
            return out


def chains(nodes: Iterable[str], graph_edges: list[Edge], roots: list[str]) -> dict[str, list[str]]:
    """node -> the shortest chain from a declared requirement to it (`app → server → torch`)."""
    adj: dict[str, list[str]] = {}
    for e in graph_edges:
        adj.setdefault(e.source, []).append(e.target)
    found: dict[str, list[str]] = {r: [r] for r in roots}
    queue = list(dict.fromkeys(roots))
    while queue:
        node = queue.pop(0)
        for dep in adj.get(node, []):
            if dep not in found:
                found[dep] = [*found[node], dep]
                queue.append(dep)
    for n in nodes:
        found.setdefault(n, [n])
    return found


def by_target(graph_edges: list[Edge]) -> Iterator[tuple[str, list[Edge]]]:
    grouped: dict[str, list[Edge]] = {}
    for e in graph_edges:
        grouped.setdefault(e.target, []).append(e)
    yield from sorted(grouped.items())

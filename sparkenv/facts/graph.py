"""The requirement graph of a resolved set: which Requires-Dist apply on the target, extras followed.

A requirement applies when its marker holds in the target's environment with no extra, or with one of
the extras some edge (or a declared requirement) asks of its package. Extras are followed to a fixed
point: `unsloth[huggingface]` turns on unsloth's `extra == "huggingface"` lines, and those may ask
further extras.
"""

from __future__ import annotations

import functools
import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass

from packaging.requirements import InvalidRequirement, Requirement
from packaging.utils import canonicalize_name

from sparkenv.environment.markers import applies, evaluator


@dataclass(frozen=True)
class Edge:
    source: str  # normalized name of the package that requires
    req: Requirement
    extra: str = ""  # the source's extra this requirement applies under ("" when it applies without one)

    @functools.cached_property  # asked tens of thousands of times by a large lock's rules
    def target(self) -> str:
        return canonicalize_name(self.req.name)


def edges(
    requires: dict[str, list[Requirement]],
    env: dict[str, str],
    root_extras: dict[str, set[str]] | None = None,
) -> list[Edge]:
    """Every requirement that applies on the target; `requires` maps a package to its Requires-Dist."""
    holds = evaluator(env)
    extras: dict[str, set[str]] = {k: set(v) for k, v in (root_extras or {}).items()}
    # each package's edges and the extras they were found under: found again only when those grew
    found: dict[str, tuple[frozenset[str], list[Edge]]] = {}
    while True:
        out = []
        for src, reqs in requires.items():
            have = frozenset(extras.get(src, ()))
            known = found.get(src)
            if known is None or known[0] != have:
                ordered = ("", *sorted(have))
                mine = []
                for req in reqs:
                    # "" when it applies with no extra, else the first extra it applies under
                    under = next((e for e in ordered if holds(req.marker, (e,))), None)
                    if under is not None:
                        mine.append(Edge(src, req, under))
                known = found[src] = (have, mine)
            out += known[1]
        grown = False
        for e in out:
            wanted = {canonicalize_name(x) for x in e.req.extras}
            have_ = extras.setdefault(e.target, set())
            if not wanted <= have_:
                have_ |= wanted
                grown = True
        if not grown:
            return out


def chains(
    nodes: Iterable[str],
    graph_edges: list[Edge],
    roots: list[str],
    root_extras: dict[str, set[str]] | None = None,
) -> dict[str, list[str]]:
    """node -> the shortest chain from a declared requirement to it, each step as it was asked for, its
    extra included (`vllm → ray[cgraph] → cupy-cuda12x`): a requirement that applies only under an extra
    is reached through a step that asks for that extra. The one definition of "the chain that pulled X
    in", for every stage."""
    adj: dict[str, list[Edge]] = {}
    for e in graph_edges:
        adj.setdefault(e.source, []).append(e)

    def label(name: str, extra: str) -> str:
        return f"{name}[{extra}]" if extra else name

    # states: (package, the extra it was asked for, "" for none); each keeps the chain that reached it
    seen: dict[tuple[str, str], list[str]] = {}
    queue: list[tuple[str, str]] = []
    for r in dict.fromkeys(roots):
        for x in ("", *sorted((root_extras or {}).get(r, set()))):
            seen[(r, x)] = [label(r, x)]
            queue.append((r, x))
    while queue:
        node, extra = queue.pop(0)
        for e in adj.get(node, []):
            if e.extra not in ("", extra):
                continue  # applies only under another extra of `node`
            path = seen[(node, extra)]
            for x in ("", *sorted(canonicalize_name(y) for y in e.req.extras)):
                state = (e.target, x)
                if state not in seen:
                    seen[state] = [*path, label(e.target, x)]
                    queue.append(state)
    found: dict[str, list[str]] = {}
    for (node, _), path in seen.items():
        if node not in found or len(path) < len(found[node]):
            found[node] = path
    for n in nodes:
        found.setdefault(n, [n])
    return found


_EXTRA_IN_MARKER = re.compile(r"""\bextra\s*==\s*["']([^"']+)["']""")


def installed_chains(requires: Mapping[str, Iterable[str]], env: dict[str, str]) -> dict[str, list[str]]:
    """The chain that pulled each installed distribution in, from installed METADATA alone (`requires`:
    normalized name -> its raw Requires-Dist): the roots are what nothing installed requires; a root's
    extra counts as asked when every requirement it adds is installed (`pip install vllm[audio]` leaves
    no other trace). Then `chains`, the one definition every stage uses."""
    parsed: dict[str, list[Requirement]] = {}
    for key, raws in requires.items():
        parsed[key] = [r for raw in raws if (r := _requirement(raw)) is not None]
    # a root is what no installed distribution names, under any of its extras: a package an extra asks
    # for is reached through that extra when it was asked, else it is no one's (its chain is itself)
    named = {canonicalize_name(r.name) for reqs in parsed.values() for r in reqs}
    roots = [k for k in parsed if k not in named]
    root_extras: dict[str, set[str]] = {}
    for root in roots:
        asked = set()
        for extra in {canonicalize_name(x) for r in parsed[root] for x in _EXTRA_IN_MARKER.findall(str(r))}:
            adds = [
                r for r in parsed[root] if applies(r.marker, env, (extra,)) and not applies(r.marker, env)
            ]
            if adds and all(canonicalize_name(r.name) in parsed for r in adds):
                asked.add(extra)
        if asked:
            root_extras[root] = asked
    return chains(parsed, edges(parsed, env, root_extras), roots, root_extras)


def _requirement(raw: str) -> Requirement | None:

    try:
        return Requirement(raw)
    except InvalidRequirement:
        return None

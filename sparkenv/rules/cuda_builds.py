"""Is a resolved member of a CUDA-capable family (torch, torchvision, …) a CUDA build? Used by rules/g1.py's
resolved-stage CPU-only check, and by the lock to know whose RECORD to read.

One name ships CUDA and CPU-only builds (older aarch64 torch wheels on PyPI carry no CUDA). A member is a
CUDA build when its version label (+cu130, NGC's .nvYY.MM), a CUDA runtime among its Requires-Dist for the
target, an exact pin on a family member that is a CUDA build (or the base's build), or a CUDA library in
its RECORD shows CUDA. Only members with none of the first three get their RECORD read.
"""

from __future__ import annotations

import functools
import os
from dataclasses import dataclass
from typing import TYPE_CHECKING

from packaging.version import InvalidVersion

from sparkenv.core.pins import exact_pin
from sparkenv.cuda import rules
from sparkenv.knowledge import packages
from sparkenv.rules import cuda_major

if TYPE_CHECKING:
    from sparkenv.facts.graph import Edge


@dataclass(frozen=True)
class Family:
    key: str
    cuda_files: tuple[str, ...]
    instead: str
    conclusive: bool  # a CUDA build always shows CUDA in its metadata: no evidence means CPU-only


@functools.cache
def families() -> dict[str, Family]:
    data = packages()  # the index address is written once in the file; `instead` names it {cuda13_index}
    return {
        k: Family(k, v.cuda_files, v.instead.replace("{cuda13_index}", data.cuda13_index), v.conclusive)
        for k, v in data.cuda_capable.items()
    }


def instead(key: str, machine: str) -> str:
    """Where a CUDA 13 build of a family member comes from: the first release on the default index
    that carries CUDA 13 for this CPU (dated data, packages.toml [[cuda13_from]]), and the family's own."""
    fam = families()[key]
    first = packages().first_cuda13(key, machine)
    own = fam.instead
    if first is None:
        return own
    return (
        f"{key}>={first.version} (the default index's {machine} wheels carry CUDA 13 from {first.version} "
        f"on; before: {first.before}), or {own}"
    )


def _label_evidence(version: str) -> str | None:
    if rules.is_cpu_label(version):
        return None
    if rules.label_cuda_major(version) is not None:
        return f"its label (+cu) in {version}"
    if rules.ngc_release(version):
        return f"its NGC label in {version}"
    return None


def _accepts(e: Edge, version: str) -> bool:

    try:
        return bool(version) and e.req.specifier.contains(version, prereleases=True)
    except InvalidVersion:
        return False


def _exact(e: Edge) -> str | None:

    return exact_pin(e.req.specifier)


def evidence(
    versions: dict[str, str], graph_edges: list[Edge], base: dict[str, str]
) -> dict[str, str | None]:
    """family member in the lock -> what shows it is a CUDA build (None: nothing yet, read its RECORD)."""
    out: dict[str, str | None] = {}
    fams = families()
    out_edges: dict[str, list[Edge]] = {}
    for e in graph_edges:
        out_edges.setdefault(e.source, []).append(e)

    def one(key: str, seen: frozenset[str]) -> str | None:
        if key in base:
            return f"the base's build ({base[key]})"
        version = versions.get(key)
        if version is None:
            return None
        if (why := _label_evidence(version)) is not None:
            return why
        target = rules.target_major()
        for e in out_edges.get(key, []):
            # evidence of a CUDA 13 build only: a CUDA 12 plugin is another verdict (rules/g1.resolved)
            if rules.is_cuda_relevant(e.target) and cuda_major.requirement_major(
                e.target, str(e.req.specifier)
            ) in (None, target):
                return f"it requires {e.req}"
        for e in out_edges.get(key, []):
            pin = _exact(e)
            if not (e.target in fams and e.target not in seen and pin):
                continue
            if e.target in base and not _accepts(e, base[e.target]):
                continue  # a pin on another torch than the base's is not the base's build
            why = one(e.target, seen | {key})
            if why is not None:
                return f"it requires {e.req}, a CUDA build ({why})"
        return None

    target = rules.target_major()
    for key in versions:
        other = [
            e
            for e in out_edges.get(key, [])
            if (m := cuda_major.requirement_major(e.target, str(e.req.specifier))) is not None and m != target
        ]
        if key in fams and not other:  # a CUDA 12 build (jax → jax-cuda12-plugin) is G1's other verdict
            out[key] = one(key, frozenset())
    return out


def exact_ties(graph_edges: list[Edge]) -> dict[str, set[str]]:
    fams = families()
    out: dict[str, set[str]] = {}
    for e in graph_edges:
        if e.source in fams and e.target in fams and _exact(e):
            out.setdefault(e.source, set()).add(e.target)
    return out


def record_evidence(key: str, record: str) -> str | None:
    """A CUDA library among the files a wheel's RECORD lists."""
    fam = families().get(key)
    for line in record.splitlines():
        path = line.split(",", 1)[0]
        name = os.path.basename(path)
        if fam and name in fam.cuda_files:
            return f"its RECORD lists {path}"
        if ".so" in name and rules.soname_major(name) is not None:
            return f"its RECORD lists {path}"
    return None

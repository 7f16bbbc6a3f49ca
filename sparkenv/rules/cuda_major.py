"""The CUDA major of a piece of evidence — name, version label, exact pin, Requires-Dist, soname, install
path — with one precedence and one severity table, for every stage (pure).

Declared requirements and the resolved set have names, versions and Requires-Dist; an installed
environment adds its shared objects and paths. All of them go through `name_version_evidence`, so a
`+cpu` or a `-cu12` is judged the same whether `sparkenv check`, `lock` or `audit` sees it.
"""

from __future__ import annotations

import functools
import os
from dataclasses import dataclass
from typing import TYPE_CHECKING

from sparkenv.core.report import Status
from sparkenv.cuda import rules
from sparkenv.environment.markers import applies, marker_environment

if TYPE_CHECKING:
    from collections.abc import Iterable

    from packaging.requirements import Requirement

    from sparkenv.cuda.elf import ElfInfo
    from sparkenv.facts.dist_view import DistView
    from sparkenv.facts.installed import AuditFacts


@dataclass(frozen=True)
class Evidence:
    major: int | None  # None with kind "cpu" means a CPU-only build
    kind: str  # "needed", "provides", "requires", "label", "ngc", "name", "extra", "pin", "path", "cpu"
    text: str
    soname: str | None = None  # for "needed" and "provides"


@dataclass
class Binding:
    key: str
    evidence: list[Evidence]
    requires_keys: list[str]  # CUDA-relevant requirements that apply on the target

    @property
    def majors(self) -> set[int]:
        return {e.major for e in self.evidence if e.major is not None}


# The precedence, strongest evidence first: what the loader will do beats what a name says.
KIND_ORDER = {
    "needed": 0,
    "provides": 1,
    "requires": 2,
    "label": 3,
    "ngc": 4,
    "name": 5,
    "extra": 5,
    "pin": 5,
    "path": 6,
    "cpu": 7,
}

# The severity table: what a piece of evidence that does not fit the target means, at every stage.
# A CUDA major other than the target's is a FAIL: the loader finds no library, or loads a CUDA 12 one
# beside CUDA 13 (only unrequired CUDA 12 *library* residue in an installed environment is a WARN, see
# rules/g1.py). `+cpu` is a FAIL for every package, not only the torch family: the label exists only on
# the PyTorch index's CPU channel (download.pytorch.org/whl/cpu), so a package carrying it has a CUDA
# build the GPU target wants (torchao+cpu has no CUDA kernels: its float8/NVFP4 paths fall back or
# raise), and it shows that the environment was installed from the CPU index. A package without GPU
# code carries no such label, so nothing harmless is caught.
OTHER_MAJOR = Status.FAIL
CPU_ONLY = Status.FAIL


def name_version_evidence(key: str, version: str | None, extras: Iterable[str] = ()) -> list[Evidence]:
    """What a normalized name, the extras asked of it and a version say about the CUDA major, strongest
    first."""
    ev: list[Evidence] = []
    name = rules.name_match(key)
    if name:
        ev.append(Evidence(name.major, "name", f"name {key} is the CUDA {name.major} build"))
    for extra in sorted(extras):
        major = rules.extra_major(extra)
        if major is not None:
            ev.append(Evidence(major, "extra", f"its extra [{extra}] installs the CUDA {major} build"))
    if not version:
        return ev
    pinned = rules.pinned_major(key, f"=={version}")
    if pinned is not None:
        ev.append(Evidence(pinned, "pin", f"{key} {version} is the CUDA {pinned} toolkit wheel"))
    label = rules.label_cuda_major(version)
    if label is not None:
        ev.append(Evidence(label, "label", f"version label of {version} says CUDA {label}"))
    if rules.is_cpu_label(version):
        ev.append(Evidence(None, "cpu", f"version {version} is a CPU-only build (+cpu)"))
    release = rules.ngc_release(version)
    if release:
        major = rules.ngc_cuda_major(release)
        ev.append(
            Evidence(
                major,
                "ngc",
                f"NGC {release} build ({version})"
                + (f", CUDA {major}" if major else ", CUDA major of that release not in the table"),
            )
        )
    ev.sort(key=lambda e: KIND_ORDER[e.kind])
    return ev


def requirement_major(key: str, specifier: str, extras: Iterable[str] = ()) -> int | None:
    """The CUDA major a requirement points to: its name, else an extra it asks for, else an exact pin on
    a versioned CUDA wheel."""
    match = rules.name_match(key)
    if match:
        return match.major
    asked = [m for e in sorted(extras) if (m := rules.extra_major(e)) is not None]
    return asked[0] if asked else rules.pinned_major(key, specifier)


def bindings(facts: AuditFacts) -> dict[str, Binding]:
    """Per distribution of an installed environment; computed once per facts (G1 and G2 both ask)."""
    cached = getattr(facts, "_bindings", None)
    if cached is not None:
        return cached
    env = marker_environment(facts.target.machine, facts.target.python_version)
    found = {key: bind(df, env) for key, df in facts.dists.items()}
    object.__setattr__(facts, "_bindings", found)
    return found


def bind(df: DistView, env: dict[str, str]) -> Binding:
    """One distribution's evidence, installed (audit) or a resolved wheel (lock): the same reading."""
    ev = name_version_evidence(df.key, df.version)
    requires_keys: list[str] = []
    for raw in df.requires:
        applied = _applicable_cuda_requirement(raw, env)
        if applied is None:
            continue
        key, spec = applied
        requires_keys.append(key)
        major = requirement_major(key, spec)
        if major is not None:
            ev.append(Evidence(major, "requires", f"requires {raw.split(';')[0].strip()}"))
    for so in df.shared_objects:
        ev += shared_object_evidence(so.relpath, so.info)
    for needle, major in rules.layout_paths():
        rel = df.path_containing(needle)
        if rel is not None:
            ev.append(Evidence(major, "path", f"installs into {os.path.dirname(rel)}/ (CUDA {major} layout)"))
            break
    if df.unread:  # a shared object whose ELF was not read still says by its name which library it is
        read = {so.relpath for so in df.shared_objects}
        for path in df.so_paths:
            major = rules.soname_major(os.path.basename(path))
            if path not in read and major is not None:
                name, where = os.path.basename(path), os.path.dirname(path)
                ev.append(Evidence(major, "provides", f"ships {name} (CUDA {major}) in {where}/", name))
    ev.sort(key=lambda e: KIND_ORDER[e.kind])
    return Binding(df.key, ev, requires_keys)


def shared_object_evidence(relpath: str, info: ElfInfo) -> list[Evidence]:
    """What one shared object says of the CUDA major: the library it is (provides) and the CUDA libraries
    it links (needed). One reading for an installed file (audit) and a wheel's member (lock)."""
    ev = []
    base = os.path.basename(relpath)
    provided = info.soname or base
    major = rules.soname_major(provided)
    if major is not None:
        shipped = provided if base == provided else f"{provided} as {base}"
        where = os.path.dirname(relpath)
        ev.append(Evidence(major, "provides", f"ships {shipped} (CUDA {major}) in {where}/", provided))
    for needed in info.needed:
        major = rules.soname_major(needed)
        if major is not None:
            ev.append(Evidence(major, "needed", f"{relpath} links {needed} (CUDA {major})", needed))
    return ev


def _applicable_cuda_requirement(raw: str, env: dict[str, str]) -> tuple[str, str] | None:
    """(normalized name, specifier) of a CUDA-relevant requirement whose marker holds on the target."""
    # packaging is imported here, not at the top: the gate imports this module and starts before every
    # workload; only the audit reads Requires-Dist.
    from packaging.utils import canonicalize_name

    head = rules.requirement_name(raw)
    if head is None or not rules.is_cuda_relevant(canonicalize_name(head)):
        return None  # the common case: parse nothing else
    req = _parse_requirement(raw)
    if req is None:
        return None
    if not applies(req.marker, env):
        return None
    return canonicalize_name(req.name), str(req.specifier)


@functools.lru_cache(maxsize=4096)
def _parse_requirement(raw: str) -> Requirement | None:
    from packaging.requirements import InvalidRequirement, Requirement

    try:
        return Requirement(raw)
    except InvalidRequirement:
        return None

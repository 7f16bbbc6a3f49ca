"""What ties each installed distribution to a CUDA major, with the evidence for it (pure)."""

from __future__ import annotations

import functools
import os
from dataclasses import dataclass

from packaging.markers import InvalidMarker, UndefinedComparison, UndefinedEnvironmentName
from packaging.requirements import InvalidRequirement, Requirement
from packaging.utils import canonicalize_name

from sparkenv.audit.scan import AuditFacts, DistFacts
from sparkenv.cuda import rules


@dataclass(frozen=True)
class Evidence:
    major: int | None  # None with kind "cpu" means a CPU-only build
    kind: str  # "needed", "provides", "requires", "label", "name", "path", "cpu", "ngc"
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


# Strongest evidence first: what the loader will do beats what a name says.
KIND_ORDER = {"needed": 0, "provides": 1, "requires": 2, "label": 3, "ngc": 4, "name": 5, "path": 6, "cpu": 7}


def marker_environment(facts: AuditFacts) -> dict[str, str]:
    """Markers are evaluated for the target environment, not for the host running sparkenv."""
    version = facts.target.python_version or "3.12"
    return {
        "implementation_name": "cpython",
        "implementation_version": f"{version}.0",
        "os_name": "posix",
        "platform_machine": facts.target.machine,
        "platform_python_implementation": "CPython",
        "platform_release": "",
        "platform_system": "Linux",
        "platform_version": "",
        "python_full_version": f"{version}.0",
        "python_version": version,
        "sys_platform": "linux",
        "extra": "",
    }


def bindings(facts: AuditFacts) -> dict[str, Binding]:
    env = marker_environment(facts)
    return {key: _bind(df, env) for key, df in facts.dists.items()}


def _bind(df: DistFacts, env: dict[str, str]) -> Binding:
    dist = df.dist
    ev: list[Evidence] = []
    name = rules.name_match(dist.key)
    if name:
        ev.append(Evidence(name.major, "name", f"name {dist.key} is the CUDA {name.major} build"))
    if dist.key in rules.versioned_names():
        head = dist.version.split(".")[0]
        if head.isdigit():
            ev.append(
                Evidence(int(head), "name", f"{dist.key} {dist.version} is the CUDA {head} toolkit wheel")
            )
    label = rules.label_cuda_major(dist.version)
    if label is not None:
        ev.append(Evidence(label, "label", f"version label of {dist.version} says CUDA {label}"))
    if rules.is_cpu_label(dist.version):
        ev.append(Evidence(None, "cpu", f"version {dist.version} is a CPU-only build (+cpu)"))
    release = rules.ngc_release(dist.version)
    if release:
        major = rules.ngc_cuda_major(release)
        ev.append(
            Evidence(
                major,
                "ngc",
                f"NGC {release} build ({dist.version})"
                + (f", CUDA {major}" if major else ", CUDA major of that release not in the table"),
            )
        )
    requires_keys: list[str] = []
    for raw in dist.requires:
        applied = _applicable_cuda_requirement(raw, env)
        if applied is None:
            continue
        key, spec = applied
        requires_keys.append(key)
        match = rules.name_match(key)
        major = match.major if match else rules.pinned_major(key, spec)
        if major is not None:
            ev.append(Evidence(major, "requires", f"requires {raw.split(';')[0].strip()}"))
    for so in df.shared_objects:
        base = os.path.basename(so.relpath)
        provided = so.info.soname or base
        major = rules.soname_major(provided)
        if major is not None:
            shipped = provided if base == provided else f"{provided} as {base}"
            where = os.path.dirname(so.relpath)
            ev.append(Evidence(major, "provides", f"ships {shipped} (CUDA {major}) in {where}/", provided))
        for needed in so.info.needed:
            major = rules.soname_major(needed)
            if major is not None:
                ev.append(Evidence(major, "needed", f"{so.relpath} links {needed} (CUDA {major})", needed))
    for needle, major in rules.layout_paths():
        rel = dist.path_containing(needle)
        if rel is not None:
            ev.append(Evidence(major, "path", f"installs into {os.path.dirname(rel)}/ (CUDA {major} layout)"))
            break
    ev.sort(key=lambda e: KIND_ORDER[e.kind])
    return Binding(dist.key, ev, requires_keys)


def _applicable_cuda_requirement(raw: str, env: dict[str, str]) -> tuple[str, str] | None:
    """(normalized name, specifier) of a CUDA-relevant requirement whose marker holds on the target."""
    head = rules.requirement_name(raw)
    if head is None or not rules.is_cuda_relevant(canonicalize_name(head)):
        return None  # the common case: parse nothing else
    req = _parse_requirement(raw)
    if req is None:
        return None
    try:
        if req.marker is not None and not req.marker.evaluate(env):
            return None
    except (InvalidMarker, UndefinedComparison, UndefinedEnvironmentName):
        return None
    return canonicalize_name(req.name), str(req.specifier)


@functools.lru_cache(maxsize=4096)
def _parse_requirement(raw: str) -> Requirement | None:
    try:
        return Requirement(raw)
    except InvalidRequirement:
        return None

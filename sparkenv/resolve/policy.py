"""The resolve-stage policy: pure functions from declared or resolved packages to G1/G2/G9 findings.

CUDA-major knowledge comes from sparkenv.cuda.rules (data/cuda.toml); package roles from
data/packages.toml; the target from a profile. Nothing here touches the system.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

from packaging.requirements import Requirement
from packaging.utils import InvalidWheelFilename, canonicalize_name, parse_wheel_filename
from packaging.version import InvalidVersion, Version

from sparkenv import datafiles
from sparkenv.cuda import rules
from sparkenv.report import Finding, Status
from sparkenv.resolve.inputs import Declared
from sparkenv.resolve.profiles import Profile

_INDEX_LABEL = re.compile(r"/(cu\d{2,3}|cpu)(?:/|$)")
# PyPI torch on Linux is CUDA 13 from 2.11 on (FACTS.md); older unlabelled pins pull CUDA 12 or CPU builds.
_TORCH_CUDA13_FROM = Version("2.11")


def _pkgs() -> dict:
    return datafiles.load("packages")


def _unsloth_family() -> set[str]:
    return {canonicalize_name(n) for n in _pkgs()["unsloth_family"]}


def _drift_prone() -> set[str]:
    return {canonicalize_name(n) for n in _pkgs()["drift_prone"]}


def _compiles_cuda() -> dict[str, list[str]]:
    return {canonicalize_name(k): list(v) for k, v in _pkgs().get("compiles_cuda", {}).items()}


def _target() -> int:
    return rules.target_major()


def _cuda_fail(key: str, version: str | None, subject_desc: str, evidence: tuple[str, ...]) -> list[Finding]:
    """G1 from what a name or version says: -cu12 names, +cu128/+cpu labels, versioned toolkit wheels."""
    out: list[Finding] = []
    target = _target()
    m = rules.name_match(key)
    if m is not None and m.major != target:
        out.append(
            Finding(
                "G1",
                Status.FAIL,
                f"{subject_desc} is built for CUDA {m.major} (name) — target is CUDA {target}",
                key,
                evidence,
                f"use {m.cuda13_name}",
            )
        )
    if version:
        major = rules.label_cuda_major(version)
        if major is not None and major != target:
            out.append(
                Finding(
                    "G1",
                    Status.FAIL,
                    f"{subject_desc} is a CUDA {major} build (+cu label) — target is CUDA {target}",
                    key,
                    evidence,
                    "use the +cu130 build (https://download.pytorch.org/whl/cu130) or the NGC base",
                )
            )
        if rules.is_cpu_label(version):
            out.append(
                Finding(
                    "G1",
                    Status.FAIL,
                    f"{subject_desc} is a CPU-only build (+cpu): no CUDA at all",
                    key,
                    evidence,
                    "use the +cu130 build or the NGC base",
                )
            )
        pinned = rules.pinned_major(key, f"=={version}")
        if pinned is not None and pinned != target:
            out.append(
                Finding(
                    "G1",
                    Status.FAIL,
                    f"{subject_desc} is CUDA {pinned}'s (its version is the CUDA version) — "
                    f"target is CUDA {target}",
                    key,
                    evidence,
                    f"use {key} {target}.x",
                )
            )
    return out


def _cuda_pass(key: str, version: str | None, subject_desc: str, evidence: tuple[str, ...]) -> list[Finding]:
    target = _target()
    m = rules.name_match(key)
    major = (
        (m.major if m else None)
        or (rules.label_cuda_major(version) if version else None)
        or (rules.pinned_major(key, f"=={version}") if version else None)
    )
    if major == target:
        return [Finding("G1", Status.PASS, f"{subject_desc} is built for CUDA {target}", key, evidence)]
    return []


# ---------------------------------------------------------------------------------------------------
# Declared requirements (sparkenv check, and the first step of sparkenv lock)


def check_declared(
    declared: list[Declared],
    profile: Profile,
    index_urls: list[str],
    staged: bool = False,
) -> list[Finding]:
    """`staged`: sparkenv lock installs the Unsloth family in its own --no-deps stage and pins every
    package, so those two rules are satisfied by construction there."""
    env = profile.marker_env()
    out: list[Finding] = []
    for url in index_urls:
        m = _INDEX_LABEL.search(url)
        if not m:
            continue
        label = f"+{m.group(1)}"
        major = rules.label_cuda_major(label)
        if rules.is_cpu_label(label) or (major is not None and major != _target()):
            what = "CPU-only" if rules.is_cpu_label(label) else f"CUDA {major}"
            out.append(
                Finding(
                    "G1",
                    Status.FAIL,
                    f"index {url} serves {what} builds — target is CUDA {_target()}",
                    url,
                    (),
                    "use https://download.pytorch.org/whl/cu130 (or leave torch to the NGC base)",
                )
            )
    skipped = 0
    for d in declared:
        if d.key is None or d.constraint:
            continue
        if not d.applies(env):
            skipped += 1
            continue
        out.extend(_declared_one(d, profile, staged))
    counted = sum(1 for d in declared if d.key and not d.constraint)
    out.append(
        Finding(
            "G1",
            Status.INFO,
            f"checked {counted} requirement(s) for {profile.describe()}; {skipped} do not apply on "
            f"{profile.machine} (markers evaluated for the target, not this host)",
            "inputs",
        )
    )
    return out


def _declared_one(d: Declared, profile: Profile, staged: bool) -> list[Finding]:
    key = d.key
    assert key is not None
    ev = (d.where,)
    desc = f"{key}{d.specifier}" if str(d.specifier) else key
    out = _cuda_fail(key, d.exact, f"{desc} ({d.where})", ev)
    if d.url and d.url.endswith(".whl"):
        out += _url_wheel(d, profile)
    if not out:
        out += _cuda_pass(key, d.exact, f"{desc} ({d.where})", ev)
    provider = profile.provider(key)
    compiles = _compiles_cuda()
    if key in compiles:
        out += _compiled(d, profile, provider, compiles[key])
    elif provider is not None:
        out += _base_provided(d, profile, provider)
    elif key == "torch" and d.exact and not d.url:
        v = Version(d.exact)
        if not v.local and v < _TORCH_CUDA13_FROM:
            out.append(
                Finding(
                    "G1",
                    Status.WARN,
                    f"{desc} ({d.where}): an unlabelled pin below {_TORCH_CUDA13_FROM} matches CUDA 12 and "
                    "CPU-only builds (==2.9.0 also matches 2.9.0+cu128; PyPI gives "
                    f"{profile.machine} a CUDA 12 or +cpu wheel)",
                    key,
                    ev,
                    "pin torch>=2.11 (CUDA 13 on PyPI), or the +cu130 build from https://download.pytorch.org/whl/cu130",
                )
            )
    if key in _drift_prone() and provider is None and not staged:
        if d.exact:
            out.append(Finding("G9", Status.PASS, f"{key} pinned exactly ({d.exact}, {d.where})", key, ev))
        else:
            out.append(
                Finding(
                    "G9",
                    Status.WARN,
                    f"{desc} ({d.where}) is not pinned exactly: {key} is drift-prone (torch, "
                    "triton, xformers "
                    "and transformers must move together)",
                    key,
                    ev,
                    f"pin {key}==<version>, or install from the lock `sparkenv lock` writes",
                )
            )
    if key in _unsloth_family():
        out.append(_unsloth(d, profile, staged))
    return out


def _url_wheel(d: Declared, profile: Profile) -> list[Finding]:
    assert d.url is not None and d.key is not None
    fname = d.url.rsplit("/", 1)[-1].split("#")[0]
    try:
        _, version, _, tags = parse_wheel_filename(fname)
    except InvalidWheelFilename:
        return []
    out = _cuda_fail(d.key, str(version), f"{d.key} @ {fname} ({d.where})", (d.where, d.url))
    machines = {t.platform for t in tags}
    if "any" not in machines and not any(p.endswith(profile.machine) for p in machines):
        out.append(
            Finding(
                "G1",
                Status.FAIL,
                f"{d.key} @ {fname} ({d.where}) is built for {', '.join(sorted(machines))}, not "
                f"{profile.machine}",
                d.key,
                (d.where, d.url),
                f"use a wheel built for {profile.machine}",
            )
        )
    return out


def _compiled(d: Declared, profile: Profile, provider: str | None, wheel_cpus: list[str]) -> list[Finding]:
    key = d.key
    assert key is not None
    ev = (d.where,)
    if provider is not None:
        base_v = profile.provides[provider]
        if not d.url and (
            not str(d.specifier) or (base_v and d.specifier.contains(base_v, prereleases=True))
        ):
            return [
                Finding(
                    "G2",
                    Status.PASS,
                    f"{key} is provided by the base ({provider} "
                    f"{base_v or 'version not recorded'}, {profile.image}); "
                    "excluded from resolution, nothing compiles",
                    key,
                    ev,
                )
            ]
        return [
            Finding(
                "G2",
                Status.FAIL,
                f"{key}{d.specifier or ' @ ' + str(d.url)} ({d.where}) is not the base's "
                f"{provider} {base_v}: "
                "installing it replaces a working build with a from-source CUDA compile (1–1.5 h "
                "that looks like a hang)",
                key,
                ev,
                f"drop the requirement and use the base's {provider}, or require {key}=={base_v}",
            )
        ]
    if d.url and d.url.endswith(".whl"):
        return []  # a prebuilt wheel: judged by its tags and labels
    if profile.machine in wheel_cpus:
        return [
            Finding(
                "G2",
                Status.PASS,
                f"{key} ({d.where}) has upstream wheels for {profile.machine}; the lock verifies "
                "one is chosen",
                key,
                ev,
            )
        ]
    return [
        Finding(
            "G2",
            Status.FAIL,
            f"{key} ({d.where}) has no {profile.machine} wheel upstream: pip compiles its CUDA code from the "
            f"sdist (1–1.5 h that looks like a hang) on {profile.name}",
            key,
            ev,
            "use an NGC profile (flash-attn is built in), or drop it and use SDPA",
        )
    ]


def _base_provided(d: Declared, profile: Profile, provider: str) -> list[Finding]:
    key = d.key
    assert key is not None
    base_v = profile.provides[provider]
    ev = (d.where,)
    name = f"{provider} {base_v}" if base_v else provider
    if d.url:
        return [
            Finding(
                "G9",
                Status.FAIL,
                f"{key} @ {d.url} ({d.where}) would replace the base's {name}",
                key,
                ev,
                f"drop it: {profile.image} provides {provider}",
            )
        ]
    if not str(d.specifier) or (base_v and d.specifier.contains(base_v, prereleases=True)):
        return [
            Finding(
                "G9",
                Status.PASS,
                f"{key}{d.specifier} is provided by the base ({name}); excluded from resolution",
                key,
                ev,
            )
        ]
    if not base_v:
        return [
            Finding(
                "G9",
                Status.WARN,
                f"{key}{d.specifier} ({d.where}): the base provides {provider} but its version is "
                "not recorded in "
                f"{profile.path}; cannot tell whether it would be replaced",
                key,
                ev,
                f"record provides.{provider} in the profile, or drop the pin",
            )
        ]
    return [
        Finding(
            "G9",
            Status.FAIL,
            f"{key}{d.specifier} ({d.where}) would replace the base's {name}",
            key,
            ev,
            f"drop the pin (the base's {provider} is kept out of resolution), or pick a profile "
            "whose base has it",
        )
    ]


def _unsloth(d: Declared, profile: Profile, staged: bool) -> Finding:
    key = d.key
    assert key is not None
    ev = (d.where,)
    if staged:
        return Finding("G9", Status.PASS, f"{key} goes into its own --no-deps stage after the rest", key, ev)
    if d.no_deps:
        return Finding("G9", Status.PASS, f"{key} ({d.where}) is in a --no-deps stage", key, ev)
    torch = profile.provider("torch")
    status = Status.FAIL if torch else Status.WARN
    why = (
        f"its dependencies replace the base's torch {profile.provides[torch]} with a PyPI build "
        "(unslothai/notebooks#132)"
        if torch
        else "its dependencies move torch, triton and xformers"
    )
    return Finding(
        "G9",
        status,
        f"{key} ({d.where}) is installed with its dependencies: {why}",
        key,
        ev,
        "install the Unsloth family in a second stage with pip install --no-deps (mark that file "
        "`# sparkenv: no-deps`), or install from the lock `sparkenv lock` writes",
    )


# ---------------------------------------------------------------------------------------------------
# The resolved set (sparkenv lock)


@dataclass
class Locked:
    key: str
    version: str
    stage: str
    wheels: list[str] = field(default_factory=list)  # file names
    sdist: str | None = None
    requires: list[Requirement] | None = None  # Requires-Dist, None when unknown


def chains(locked: dict[str, Locked], roots: list[str], env: dict[str, str]) -> dict[str, list[str]]:
    """key -> the shortest chain from a declared requirement (`peft → torch`), through Requires-Dist."""
    graph: dict[str, list[str]] = {}
    for key, pkg in locked.items():
        deps = []
        for req in pkg.requires or []:
            if req.marker is None or req.marker.evaluate(env):
                deps.append(canonicalize_name(req.name))
        graph[key] = deps
    found: dict[str, list[str]] = {r: [r] for r in roots}
    queue = list(dict.fromkeys(roots))
    while queue:
        node = queue.pop(0)
        for dep in graph.get(node, []):
            if dep not in found:
                found[dep] = [*found[node], dep]
                queue.append(dep)
    return found


def check_resolved(
    locked: dict[str, Locked],
    roots: list[str],
    profile: Profile,
    no_deps_stage: str | None,
    excluded_names: list[str] | None = None,
) -> list[Finding]:
    """`excluded_names`: what was kept out of resolution (default: all the base provides; less under
    --allow-replace)."""
    env = profile.marker_env()
    via = chains(locked, roots, env)
    out: list[Finding] = []
    excluded = set(profile.excluded() if excluded_names is None else excluded_names)
    compiles = _compiles_cuda()

    def chain(key: str) -> str:
        return " → ".join(via.get(key, [key]))

    for key, pkg in sorted(locked.items()):
        ev = (*(x for x in (*pkg.wheels, pkg.sdist) if x), f"via {chain(key)}")
        desc = f"{key} {pkg.version} (via {chain(key)})"
        fails = _cuda_fail(key, pkg.version, desc, ev)
        for req in pkg.requires or []:
            if req.marker is not None and not req.marker.evaluate(env):
                continue
            dep = canonicalize_name(req.name)
            if dep in locked:
                continue  # judged as itself, with its chain
            m = rules.name_match(dep)
            pinned = rules.pinned_major(dep, str(req.specifier))
            major = m.major if m else pinned
            if major is not None and major != _target():
                fails.append(
                    Finding(
                        "G1",
                        Status.FAIL,
                        f"{desc} requires {req} (CUDA {major}) — target is CUDA {_target()}",
                        key,
                        ev,
                        f"pick a {key} build for CUDA {_target()}",
                    )
                )
        out += fails or _cuda_pass(key, pkg.version, desc, ev)
        if pkg.sdist and not pkg.wheels:
            if key in compiles:
                out.append(
                    Finding(
                        "G2",
                        Status.FAIL,
                        f"{desc}: only an sdist ({pkg.sdist}) fits {profile.python_platform}; installing it "
                        "compiles CUDA code (1–1.5 h that looks like a hang)",
                        key,
                        ev,
                        "use an NGC profile that provides it, or drop it (SDPA instead of flash-attn)",
                    )
                )
            else:
                out.append(
                    Finding(
                        "G2",
                        Status.WARN,
                        f"{desc}: only an sdist ({pkg.sdist}) fits {profile.python_platform}; it "
                        "is built at install",
                        key,
                        ev,
                        "prefer a version with a wheel for the target",
                    )
                )
        if key in excluded:
            out.append(
                Finding(
                    "G9",
                    Status.FAIL,
                    f"{desc} would be installed beside or over the base's {profile.provider(key)}",
                    key,
                    ev,
                    f"exclude {key}: the base provides it",
                )
            )
        elif key in _drift_prone():
            out.append(Finding("G9", Status.PASS, f"{key} pinned =={pkg.version} in the lock", key, ev))
    # What the base provides, and which requirement would have pulled it in.
    wanted: dict[str, list[str]] = {}
    for key, pkg in locked.items():
        for req in pkg.requires or []:
            dep = canonicalize_name(req.name)
            if dep in excluded and (req.marker is None or req.marker.evaluate(env)):
                base_v = profile.provides.get(profile.provider(dep) or dep, "")
                if req.url or (base_v and not _accepts(req, base_v)):
                    continue  # a conflict with the base: resolve/closure.py reports it as a FAIL
                wanted.setdefault(dep, []).append(f"{chain(key)} → {dep}")
    for dep, paths in sorted(wanted.items()):
        prov = profile.provider(dep) or dep
        out.append(
            Finding(
                "G9",
                Status.PASS,
                f"{'; '.join(sorted(paths)[:4])}{' …' if len(paths) > 4 else ''} excluded: "
                "provided by the base "
                f"({prov} {profile.provides.get(prov) or 'version not recorded'})",
                dep,
                tuple(sorted(paths)),
            )
        )
    if no_deps_stage:
        for key, pkg in sorted(locked.items()):
            if pkg.stage != no_deps_stage or not pkg.requires:
                continue
            missing = sorted(
                {
                    canonicalize_name(r.name)
                    for r in pkg.requires
                    if (r.marker is None or r.marker.evaluate(env))
                    and canonicalize_name(r.name) not in locked
                    and canonicalize_name(r.name) not in excluded
                }
            )
            if missing:
                out.append(
                    Finding(
                        "G9",
                        Status.INFO,
                        f"{key} {pkg.version} is installed --no-deps; not in the lock: {', '.join(missing)}",
                        key,
                        tuple(missing),
                    )
                )
    return out


def _accepts(req: Requirement, version: str) -> bool:
    try:
        return req.specifier.contains(Version(version), prereleases=True)
    except InvalidVersion:
        return False


def version_ok(version: str) -> bool:
    try:
        Version(version)
    except InvalidVersion:
        return False
    return True

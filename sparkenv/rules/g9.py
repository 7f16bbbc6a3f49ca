"""G9 — drift: a bare pip environment, a pip install that replaced the base's torch, packages moved off
the image's pins or the lock: every stage's judgement.

declared: pins that would replace what the base provides, drift-prone packages not pinned exactly, the
Unsloth family installed with its dependencies (check, lock); resolved: what the base provides kept out
of the lock, drift-prone packages pinned, --no-deps stages (lock); image: the base's packages untouched
by the lock's install steps (build); installed: container markers, NGC torch replaced, packages off the
image's constraint file, drift against --lock, requirements unmet as pip check reports them (audit,
build's self-audit); live: the same markers and
NGC torch on the running machine (gate).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from sparkenv.cuda import rules
from sparkenv.knowledge import packages
from sparkenv.report import Finding, Status
from sparkenv.rules import Rule, Stage, ngc, requirements, unsloth

if TYPE_CHECKING:
    from packaging.requirements import Requirement

    from sparkenv.audit.scan import AuditFacts
    from sparkenv.gate.view import GateFacts
    from sparkenv.resolve.inputs import Declared
    from sparkenv.resolve.policy import DeclaredFacts, ResolvedFacts
    from sparkenv.resolve.profiles import Profile


# ---------------------------------------------------------------------------------------------------
# Stage.DECLARED: the project's inputs


def declared(facts: DeclaredFacts) -> list[Finding]:
    profile, staged = facts.profile, facts.staged
    compiles = packages().compiles_cuda
    out: list[Finding] = []
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
                out.append(Finding("G9", Status.PASS, pinned, key, ev))
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
        if unsloth.is_member(key):
            out.append(_declared_unsloth(d, profile, staged))
    return out


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


def _declared_unsloth(d: Declared, profile: Profile, staged: bool) -> Finding:
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
# Stage.RESOLVED: the lock's resolved set


def resolved(facts: ResolvedFacts) -> list[Finding]:
    from packaging.utils import canonicalize_name

    profile = facts.profile
    excluded = facts.excluded
    out: list[Finding] = []
    for key, pkg in sorted(facts.locked.items()):
        ev, desc = facts.evidence(key), facts.describe(key)
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
        elif key in packages().drift_prone:
            out.append(Finding("G9", Status.PASS, f"{key} pinned =={pkg.version} in the lock", key, ev))
    # What the base provides, and which requirement would have pulled it in.
    wanted: dict[str, list[str]] = {}
    for key in facts.locked:
        for req in facts.applicable_requires(key):
            dep = canonicalize_name(req.name)
            if dep in excluded:
                base_v = profile.provides.get(profile.provider(dep) or dep, "")
                if req.url or (base_v and not _accepts(req, base_v)):
                    continue  # a conflict with the base: resolve/closure.py reports it as a FAIL
                wanted.setdefault(dep, []).append(f"{facts.chain(key)} → {dep}")
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
    if facts.no_deps_stage:
        for key, pkg in sorted(facts.locked.items()):
            if pkg.stage != facts.no_deps_stage or not pkg.requires:
                continue
            missing = sorted(
                {
                    canonicalize_name(r.name)
                    for r in facts.applicable_requires(key)
                    if canonicalize_name(r.name) not in facts.locked
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
    from packaging.version import InvalidVersion, Version

    try:
        return req.specifier.contains(Version(version), prereleases=True)
    except InvalidVersion:
        return False


# ---------------------------------------------------------------------------------------------------
# Stage.INSTALLED: an environment read from outside (sparkenv audit)


def installed(facts: AuditFacts) -> list[Finding]:
    return [_container(facts), *_ngc(facts), *_drift(facts), *_requirements(facts)]


def _requirements(facts: AuditFacts) -> list[Finding]:
    """Everything pip check reports (and the extras it skips), WARN: see rules/requirements.py."""
    broken, unparsed, checked = requirements.find(facts)
    out: list[Finding] = []
    by_requirer: dict[str, list[requirements.Broken]] = {}
    for b in broken:
        by_requirer.setdefault(b.requirer, []).append(b)
    base_pins = facts.ngc.pins
    for requirer, items in by_requirer.items():
        out.extend(_requirement_finding(requirer, b, base_pins.get(b.required) == b.installed) for b in items)
    for u in unparsed:
        out.append(
            Finding(
                "G9",
                Status.WARN,
                f"{u.requirer}: Requires-Dist {u.text!r} cannot be parsed ({u.reason}); not checked",
                u.requirer,
                (str(facts.dists[u.requirer].dist.meta_dir / "METADATA"),),
                None,
            )
        )
    if not broken:
        out.append(
            Finding(
                "G9",
                Status.PASS,
                f"requirements met: {checked} requirement(s) of {len(facts.dists)} distributions, markers "
                f"for {facts.target.machine} Python {facts.target.python_version or '?'} (what pip check "
                "checks, plus the extras asked for)",
                "requirements",
            )
        )
    return out


def _requirement_finding(requirer: str, b: requirements.Broken, from_base: bool) -> Finding:
    who = f"{requirer} {b.requirer_version}" + (f" (extra {b.via_extra})" if b.via_extra else "")
    req = b.requirement
    if b.missing:
        return Finding(
            "G9",
            Status.WARN,
            f"{who} requires {req}, which is not installed",
            requirer,
            (f"Requires-Dist: {req}",),
            f"pip install '{req}' (or uninstall {requirer} if nothing uses it)",
        )
    fix = f"pip install '{req}', or a {requirer} version that accepts {b.required} {b.installed}"
    if from_base:  # replacing what the NGC image built with is the worse problem (G9): keep it
        fix = (
            f"keep {b.required} {b.installed} (the NGC base pins it in /etc/pip/constraint.txt); install a "
            f"{requirer} version that accepts it, or --no-deps if {requirer} runs with it"
        )
    return Finding(
        "G9",
        Status.WARN,
        f"{who} requires {req}, but {b.required} {b.installed} is installed",
        requirer,
        (f"Requires-Dist: {req}", f"installed: {b.required} {b.installed}"),
        fix,
    )


def _container(facts: AuditFacts) -> Finding:
    c = facts.container
    if c.inside:
        return Finding(
            "G9", Status.PASS, f"inside a container ({'; '.join(c.markers)})", "container", c.markers
        )
    return Finding(
        "G9",
        Status.WARN,
        "no container marker found: if this is a bare pip environment, torch, triton, xformers and "
        "transformers drift independently",
        "container",
        tuple(f"checked {p}" for p in c.checked),
        "run inside an NGC PyTorch container (sparkenv build makes one); if bare pip is unavoidable, pin "
        "with a lock and install the Unsloth family with --no-deps",
    )


def ngc_torch(image: ngc.NgcFacts, torch_version: str) -> Finding:
    """Inside an NGC image, torch is NGC's own build or a pip install replaced it: the same finding for
    the audit and the gate."""
    markers = tuple(image.markers())
    if rules.ngc_release(torch_version):
        return Finding(
            "G9", Status.PASS, f"torch {torch_version} is the {image.describe()} build", "torch", markers
        )
    pinned = image.pins.get("torch")
    return Finding(
        id="G9",
        status=Status.FAIL,
        summary=f"{image.describe()} detected but torch {torch_version} is not NGC's build: "
        "a pip install replaced it",
        subject="torch",
        evidence=(*markers, *([f"the image pinned torch=={pinned}"] if pinned else [])),
        fix="rebuild from the image and install other packages with --no-deps, or keep "
        "PIP_CONSTRAINT=/etc/pip/constraint.txt in effect",
    )


def _ngc(facts: AuditFacts) -> list[Finding]:
    n = facts.ngc
    if not n.detected:
        return []
    out: list[Finding] = []
    markers = tuple(n.markers())
    image = n.describe()
    torch = facts.dists.get("torch")
    if torch is None:
        out.append(
            Finding(
                "G9",
                Status.FAIL,
                f"{image} detected but torch is not installed in the target",
                "torch",
                markers,
                "audit the image's own environment, or rebuild from the image",
            )
        )
    else:
        out.append(ngc_torch(n, torch.dist.version))
    for key, pinned in sorted(n.pins.items()):
        df = facts.dists.get(key)
        if key == "torch" or df is None or df.dist.version == pinned:
            continue
        out.append(
            Finding(
                "G9",
                Status.WARN,
                f"{key} {df.dist.version} replaced the image's {key}=={pinned} ({n.constraint_file})",
                key,
                markers,
                f"pip install --no-deps '{key}=={pinned}', or rebuild from the image",
            )
        )
    return out


def _left_to_the_base(key: str, version: str, path: str, image: str | None, facts: AuditFacts) -> Finding:
    """The lock leaves `key` to the base on purpose (its [tool.sparkenv] excluded): the same advice as
    `sparkenv lock` gives, never "pin it in the lock"."""
    base = image or "the base image"
    if rules.ngc_release(version) or facts.ngc.pins.get(key) == version:
        return Finding("G9", Status.PASS, f"{key} {version} is the base's, as {path} intends", key, (path,))
    return Finding(
        id="G9",
        status=Status.WARN,
        summary=f"{key} {version} is not the base's build: {path} leaves {key} to {base} on purpose",
        subject=key,
        evidence=(f"{path}: [tool.sparkenv] excluded lists {key}",),
        fix=f"rebuild from {base} (sparkenv build) and do not install {key} with pip; the lock keeps it "
        "out on purpose",
    )


def _drift(facts: AuditFacts) -> list[Finding]:
    installed = [facts.dists[k] for k in packages().drift_prone if k in facts.dists]
    if facts.lock is None:
        if not installed:
            return []
        versions = ", ".join(f"{d.dist.key} {d.dist.version}" for d in installed)
        return [
            Finding(
                "G9", Status.INFO, f"no --lock given: {versions} not compared with a lock", "lock", (), None
            )
        ]
    out: list[Finding] = []
    lock = facts.lock
    for df in installed:
        key, version = df.dist.key, df.dist.version
        src = f"lock {lock.path}"
        if key not in lock.pins and key in lock.excluded:
            out.append(_left_to_the_base(key, version, lock.path, lock.image, facts))
            continue
        if key not in lock.pins:
            if rules.ngc_release(version) or facts.ngc.pins.get(key) == version:
                out.append(
                    Finding(
                        "G9",
                        Status.PASS,
                        f"{key} {version} is provided by the NGC base, not the lock",
                        key,
                        (src,),
                    )
                )
            else:
                out.append(
                    Finding(
                        "G9",
                        Status.WARN,
                        f"{key} {version} is installed but not pinned in {lock.path}",
                        key,
                        (src,),
                        f"pin {key}=={version} in the lock (sparkenv lock)",
                    )
                )
            continue
        pinned = lock.pins[key]
        if pinned is None:
            out.append(
                Finding(
                    "G9",
                    Status.WARN,
                    f"{key} {version}: {lock.path} lists it without an exact pin",
                    key,
                    (src,),
                    f"pin {key}=={version} exactly",
                )
            )
        elif pinned != version:
            out.append(
                Finding(
                    "G9",
                    Status.WARN,
                    f"{key} drifted: {lock.path} pins {pinned}, {version} is installed",
                    key,
                    (src,),
                    f"pip install --no-deps '{key}=={pinned}', or re-lock",
                )
            )
        else:
            out.append(Finding("G9", Status.PASS, f"{key} {version} matches {lock.path}", key, (src,)))
    return out


# ---------------------------------------------------------------------------------------------------
# Stage.LIVE: the running machine (sparkenv gate)


def live(f: GateFacts) -> list[Finding]:
    out = []
    err = f.error_finding("G9", "container", "container")
    if err:
        out.append(err)
    else:
        markers = (f.section("container") or {}).get("markers") or []
        if markers:
            out.append(
                Finding(
                    "G9",
                    Status.PASS,
                    f"inside a container ({'; '.join(markers)})",
                    "container",
                    tuple(markers),
                )
            )
        else:
            out.append(
                Finding(
                    "G9",
                    Status.WARN,
                    "no container marker found (unknown, not necessarily bare host): "
                    "a bare pip environment drifts",
                    "container",
                    (),
                    "run in an NGC PyTorch container (sparkenv build makes one)",
                )
            )
    image = ngc.from_snapshot(f.env, (f.section("container") or {}).get("ngc"))
    torch_version = (f.torch or {}).get("version") or f.dists.get("torch")
    if image.detected and torch_version:
        out.append(ngc_torch(image, str(torch_version)))
    if any(k in f.dists for k in ("triton", "pytorch-triton")):
        ptxas = f.env.get("TRITON_PTXAS_PATH")
        if ptxas:
            out.append(Finding("G9", Status.PASS, f"TRITON_PTXAS_PATH={ptxas}", "TRITON_PTXAS_PATH"))
        else:
            status = Status.WARN if f.is_gb10 else Status.INFO
            out.append(
                Finding(
                    "G9",
                    status,
                    "Triton is installed and TRITON_PTXAS_PATH is unset: its bundled ptxas "
                    "may predate CUDA 13 and reject sm_121a",
                    "TRITON_PTXAS_PATH",
                    (),
                    "export TRITON_PTXAS_PATH=/usr/local/cuda/bin/ptxas (NGC images set it)",
                )
            )
    return out


RULES = (
    Rule(
        Stage.DECLARED,
        declared,
        "pins on what the profile's base provides, drift-prone packages (torch, triton, xformers, "
        "transformers) pinned exactly or not, the Unsloth family in a --no-deps stage or not",
    ),
    Rule(
        Stage.RESOLVED,
        resolved,
        "resolved packages the base provides, drift-prone packages pinned in the lock, what a --no-deps "
        "stage's packages require that the lock lacks",
    ),
    Rule(
        Stage.INSTALLED,
        installed,
        "container markers, $NVIDIA_PYTORCH_VERSION and /etc/pip/constraint.txt against the installed "
        "torch and the image's pins, drift-prone packages against --lock, every distribution's "
        "Requires-Dist against what is installed (pip check, plus the extras asked for)",
    ),
    Rule(
        Stage.LIVE,
        live,
        "container markers, $NVIDIA_PYTORCH_VERSION and /etc/pip/constraint.txt against the running "
        "torch, TRITON_PTXAS_PATH next to Triton",
    ),
)

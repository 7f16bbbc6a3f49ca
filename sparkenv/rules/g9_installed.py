"""G9 at Stage.INSTALLED: an environment read from outside (sparkenv audit, build's self-audit): container
markers, NGC torch replaced, packages off the image's constraint file, drift against --lock, requirements
unmet as pip check reports them. `ngc_torch` and NO_CONTAINER_FIX are the gate's too (g9_live)."""

from __future__ import annotations

from functools import partial
from typing import TYPE_CHECKING

from sparkenv.core.report import Finding, GotchaId, Status
from sparkenv.cuda import rules
from sparkenv.facts import ngc
from sparkenv.knowledge import packages
from sparkenv.rules import data_age

if TYPE_CHECKING:
    from sparkenv.facts.installed import AuditFacts
    from sparkenv.facts.lock import Lock
    from sparkenv.rules import requirements

_finding = partial(Finding, GotchaId.G9)  # every finding of this module is G9's


def installed(facts: AuditFacts) -> list[Finding]:
    torch = facts.dists.get("torch")
    release = facts.ngc.release or rules.ngc_release(torch.version if torch else "")
    return [
        _container(facts),
        *_ngc(facts),
        *data_age.base(GotchaId.G9, release, "this environment"),
        *_lock_profile(facts),
        *_drift(facts),
        *_requirements(facts),
    ]


def _lock_profile(facts: AuditFacts) -> list[Finding]:
    """--lock's profile, found as `lock --check` and `build` find it: changed since the lock was written
    (a WARN: the environment may be right, the lock no longer describes its target; `lock --check` fails
    the lock itself), or not here (an image keeps the lock, not the profile file)."""
    p = facts.lock_profile
    if p is None:
        return []
    if not p.found:
        summary = f"{p.lock} was locked for profile {p.profile}, which is not here: not compared ({p.why})"
        return [_finding(status=Status.INFO, summary=summary, subject="profile")]
    if p.changed:
        return [
            _finding(
                status=Status.WARN,
                summary=f"profile {p.profile} changed since {p.lock} was written: the lock was resolved for "
                "what it said then",
                subject="profile",
                evidence=(f"{p.lock}: [tool.sparkenv] profile-hash",),
                fix=f"re-lock for the profile as it is now (sparkenv lock INPUT… --profile {p.profile}; "
                "sparkenv lock --check prints the exact command), then rebuild or reinstall",
            )
        ]
    summary = f"{p.lock} was locked for profile {p.profile}, unchanged since"
    return [_finding(status=Status.PASS, summary=summary, subject="profile")]


def _requirements(facts: AuditFacts) -> list[Finding]:
    """Everything pip check reports (and the extras it skips), WARN: see rules/requirements.py."""
    # Imported here: it pulls packaging.markers, .tags, sysconfig and logging, which the gate's start
    # (the live rules of this module) never needs.
    from sparkenv.rules import requirements

    broken, unparsed, checked = requirements.find(facts)
    base_pins = facts.ngc.pins
    # one finding per problem, as `uv pip check` prints one line per problem: the subject is the pair
    # (requirer:required), so findings about one distribution are not merged into one long line
    out = [_requirement_finding(b.requirer, b, base_pins.get(b.required) == b.installed) for b in broken]
    for u in unparsed:
        out.append(
            _finding(
                status=Status.WARN,
                summary=f"{u.requirer}: Requires-Dist {u.text!r} cannot be parsed ({u.reason}); not checked",
                subject=u.requirer,
                evidence=(str(facts.dists[u.requirer].dist.meta_dir / "METADATA"),),
            )
        )
    if not broken:
        out.append(
            _finding(
                status=Status.PASS,
                summary=f"requirements met: {checked} requirement(s) of {len(facts.dists)} distributions, "
                f"markers for {facts.target.machine} Python {facts.target.python_version or '?'} (what pip "
                "check checks, plus the extras asked for)",
                subject="requirements",
            )
        )
    return out


def _requirement_finding(requirer: str, b: requirements.Broken, from_base: bool) -> Finding:
    who = f"{requirer} {b.requirer_version}" + (f" (extra {b.via_extra})" if b.via_extra else "")
    req = b.requirement
    if b.missing:
        return _finding(
            status=Status.WARN,
            summary=f"{who} requires {req}, which is not installed",
            subject=f"{requirer}:{b.required}",
            evidence=(f"Requires-Dist: {req}",),
            fix=f"pip install '{req}' (or uninstall {requirer} if nothing uses it)",
        )
    fix = f"pip install '{req}', or a {requirer} version that accepts {b.required} {b.installed}"
    if from_base:  # replacing what the NGC image built with is the worse problem (G9): keep it
        fix = (
            f"keep {b.required} {b.installed} (the NGC base pins it in /etc/pip/constraint.txt); install a "
            f"{requirer} version that accepts it, or --no-deps if {requirer} runs with it"
        )
    return _finding(
        status=Status.WARN,
        summary=f"{who} requires {req}, but {b.required} {b.installed} is installed",
        subject=f"{requirer}:{b.required}",
        evidence=(f"Requires-Dist: {req}", f"installed: {b.required} {b.installed}"),
        fix=fix,
    )


def _container(facts: AuditFacts) -> Finding:
    c = facts.container
    if c.inside:
        return _finding(
            status=Status.PASS,
            summary=f"inside a container ({'; '.join(c.markers)})",
            subject="container",
            evidence=c.markers,
        )
    return _finding(
        status=Status.WARN,
        summary="no container marker found: if this is a bare pip environment, torch, triton, xformers and "
        "transformers drift independently",
        subject="container",
        evidence=tuple(f"checked {p}" for p in c.checked),
        fix=NO_CONTAINER_FIX,
    )


# No container marker, seen from outside (audit) or inside (gate): one fix for both.
NO_CONTAINER_FIX = (
    "run inside an NGC PyTorch container (sparkenv build makes one); if bare pip is unavoidable, pin with a "
    "lock and install the Unsloth family with --no-deps"
)


def ngc_torch(image: ngc.NgcFacts, torch_version: str) -> Finding:
    """Inside an NGC image, torch is NGC's own build or a pip install replaced it: the same finding for
    the audit and the gate."""
    markers = tuple(image.markers())
    if rules.ngc_release(torch_version):
        return _finding(
            status=Status.PASS,
            summary=f"torch {torch_version} is the {image.describe()} build",
            subject="torch",
            evidence=markers,
        )
    pinned = image.pins.get("torch")
    return _finding(
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
            _finding(
                status=Status.FAIL,
                summary=f"{image} detected but torch is not installed in the target",
                subject="torch",
                evidence=markers,
                fix="audit the image's own environment, or rebuild from the image",
            )
        )
    else:
        out.append(ngc_torch(n, torch.dist.version))
    for key, pinned in sorted(n.pins.items()):
        df = facts.dists.get(key)
        if key == "torch" or df is None or df.dist.version == pinned:
            continue
        out.append(
            _finding(
                status=Status.WARN,
                summary=f"{key} {df.dist.version} replaced the image's {key}=={pinned} ({n.constraint_file})",
                subject=key,
                evidence=markers,
                fix=f"pip install --no-deps '{key}=={pinned}', or rebuild from the image",
            )
        )
    return out


def _left_to_the_base(key: str, version: str, path: str, image: str | None, facts: AuditFacts) -> Finding:
    """The lock leaves `key` to the base on purpose (its [tool.sparkenv] excluded): the same advice as
    `sparkenv lock` gives, never "pin it in the lock"."""
    base = image or "the base image"
    if rules.ngc_release(version) or facts.ngc.pins.get(key) == version:
        return _finding(
            status=Status.PASS,
            summary=f"{key} {version} is the base's, as {path} intends",
            subject=key,
            evidence=(path,),
        )
    return _finding(
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
            _finding(
                status=Status.INFO,
                summary=f"no --lock given: {versions} not compared with a lock",
                subject="lock",
            )
        ]
    return [_drift_one(df.dist.key, df.dist.version, facts.lock, facts) for df in installed]


def _drift_one(key: str, version: str, lock: Lock, facts: AuditFacts) -> Finding:
    """One drift-prone distribution against the lock: each finding is about `key`, read from the lock."""
    if key not in lock.pins and key in lock.excluded:
        return _left_to_the_base(key, version, lock.path, lock.image, facts)
    said = partial(_finding, subject=key, evidence=(f"lock {lock.path}",))
    if key not in lock.pins:
        if rules.ngc_release(version) or facts.ngc.pins.get(key) == version:
            return said(Status.PASS, f"{key} {version} is provided by the NGC base, not the lock")
        return said(
            Status.WARN,
            f"{key} {version} is installed but not pinned in {lock.path}",
            fix=f"pin {key}=={version} in the lock (sparkenv lock)",
        )
    pinned = lock.pins[key]
    if pinned is None:
        return said(
            Status.WARN,
            f"{key} {version}: {lock.path} lists it without an exact pin",
            fix=f"pin {key}=={version} exactly",
        )
    if pinned != version:
        return said(
            Status.WARN,
            f"{key} drifted: {lock.path} pins {pinned}, {version} is installed",
            fix=f"pip install --no-deps '{key}=={pinned}', or re-lock",
        )
    return said(Status.PASS, f"{key} {version} matches {lock.path}")

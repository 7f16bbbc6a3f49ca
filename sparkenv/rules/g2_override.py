"""G2 for `sparkenv patch sdpa` (--install, --uninstall, status): the SDPA override's state after the
action. Patching is an action, not a stage of the registry: the patch command calls `override_outcome`
(re-exported by rules/g2.py) directly; the gate's own G2 rule judges whether the override is active."""

from __future__ import annotations

from typing import TYPE_CHECKING

from sparkenv.report import Finding, GotchaId, Status

if TYPE_CHECKING:
    from sparkenv.facts.override import OverrideFacts


def override_outcome(f: OverrideFacts) -> Finding:
    """`sparkenv patch sdpa` (--install, --uninstall, status): the override's state, judged here and
    called by the patch command directly (patching is an action, not a stage of the registry)."""
    if f.action == "install":
        return _installed(f)
    if f.action == "uninstall":
        return _uninstalled(f)
    return _override_status(f)


def _installed(f: OverrideFacts) -> Finding:
    """--install: written, and (where an interpreter was found) whether it loads there."""
    pth_name = f.pth.rsplit("/", 1)[-1]
    evidence = (f"wrote {f.module}", f"wrote {f.pth}")
    if f.verified is None:
        return Finding(
            id=GotchaId.G2,
            status=Status.WARN,
            summary=f"SDPA override installed in {f.site}; not verified: no interpreter found for it",
            subject=f.pth,
            evidence=evidence,
            fix=f"run that environment's python with SPARKENV_DEBUG=1 and check {pth_name} loads",
        )
    ok, why = f.verified
    if ok:
        return Finding(
            id=GotchaId.G2,
            status=Status.PASS,
            summary=f"SDPA override installed in {f.site}: {why}; SPARKENV_SDPA=0 switches it off",
            subject=f.pth,
            evidence=(*evidence, why),
        )
    return Finding(
        id=GotchaId.G2,
        status=Status.FAIL,
        summary=f"SDPA override written to {f.site} but not active: {why}",
        subject=f.pth,
        evidence=(*evidence, why),
        fix="install it into a site folder of the interpreter that runs the job (sparkenv patch sdpa "
        f"--install <that interpreter>), then sparkenv patch sdpa --uninstall {f.site}",
    )


def _uninstalled(f: OverrideFacts) -> Finding:
    names = ", ".join(p.rsplit("/", 1)[-1] for p in f.removed)
    summary = (
        f"SDPA override removed from {f.site} ({names})"
        if f.removed
        else f"SDPA override was not installed in {f.site}: nothing to remove"
    )
    return Finding(
        id=GotchaId.G2,
        status=Status.INFO,
        summary=summary,
        subject=f.pth,
        evidence=tuple(f"removed {p}" for p in f.removed),
    )


def _override_status(f: OverrideFacts) -> Finding:
    """No action: is the override there, whole, and this sparkenv version's?"""
    pth_name, module_name = f.pth.rsplit("/", 1)[-1], f.module.rsplit("/", 1)[-1]
    if not f.present:
        return Finding(
            id=GotchaId.G2,
            status=Status.INFO,
            summary=f"SDPA override not installed in {f.site} (sparkenv patch sdpa --install to add it)",
            subject=f.pth,
        )
    if not f.module_present:
        return Finding(
            id=GotchaId.G2,
            status=Status.FAIL,
            summary=f"{pth_name} in {f.site} names {module_name}, which is missing: override off",
            subject=f.pth,
            evidence=(f"missing {f.module}",),
            fix=f"sparkenv patch sdpa --install {f.target}",
        )
    if not f.current:
        return Finding(
            id=GotchaId.G2,
            status=Status.WARN,
            summary=f"SDPA override installed in {f.site}, from another sparkenv version",
            subject=f.pth,
            evidence=(f"{f.module} differs from {f.source}",),
            fix=f"sparkenv patch sdpa --install {f.target} to refresh it",
        )
    return Finding(
        id=GotchaId.G2,
        status=Status.PASS,
        summary=f"SDPA override installed in {f.site}; SPARKENV_SDPA=0 switches it off",
        subject=f.pth,
        evidence=(f.pth, f.module),
    )

"""G1 at Stage.RESOLVED from what each resolved binary wheel ships (sparkenv lock): its file list (the zip
central directory) and, for GPU packages, what its shared objects link (DT_NEEDED), judged by the audit's
own function (g1_installed.dist_finding) on the wheel's view of the same facts (facts/dist_view.WheelDist)."""

from __future__ import annotations

from dataclasses import replace
from typing import TYPE_CHECKING

from sparkenv.core.report import Finding, GotchaId, Status
from sparkenv.cuda import rules
from sparkenv.facts.dist_view import WheelDist
from sparkenv.facts.installed import SharedObject
from sparkenv.rules import cuda_builds, cuda_major
from sparkenv.rules.g1_installed import dist_finding

if TYPE_CHECKING:
    from sparkenv.facts.dist_view import WheelDist
    from sparkenv.facts.resolved import ResolvedFacts

# why a wheel's ELF was not read at lock when the package is not a GPU package (lock/resolved.py)
NOT_A_GPU_PACKAGE = "the lock reads the ELF of GPU packages' wheels only"


def resolved_wheel_files(facts: ResolvedFacts) -> list[Finding]:
    """Each resolved binary wheel judged as the audit judges the installed distribution: per-CUDA-release
    libraries, CUDA libraries it links or bundles, shared objects for another CPU, a CPU-only torch —
    `dist_finding`, fed by the wheel. A wheel whose list could not be read is an INFO, never a silent
    PASS. Packages whose name or version already says their CUDA major, and torch's family (whose build is
    judged from its metadata and RECORD), are g1_declared's: one line per package."""

    fams = cuda_builds.families()
    views = wheel_views(facts)
    binds = {k: cuda_major.bind(d, facts.env) for k, d in views.items()}
    has_target = any(rules.target_major() in b.majors for b in binds.values())
    out = []
    for key, files in sorted(facts.wheel_files.items()):
        if key not in facts.locked:
            continue
        if isinstance(files, str):
            out.append(
                Finding(
                    id=GotchaId.G1,
                    status=Status.INFO,
                    summary=f"{facts.describe(key)}: its wheel's file list could not be read ({files}); its "
                    "libraries are checked only by `sparkenv audit` after install",
                    subject=key,
                    evidence=facts.evidence(key),
                )
            )
            continue
        said = cuda_major.name_version_evidence(key, views[key].version)
        if key in fams or any(e.major or e.kind == "cpu" for e in said):
            continue
        required_by = sorted(e.source for e in facts.edges if e.target == key and rules.is_cuda_relevant(key))
        chain = facts.graph_chain.get(key, [key])
        on_base = bool(facts.profile.image)
        found = dist_finding(
            views[key], binds[key], facts.profile.machine, required_by, has_target, chain, on_base
        )
        if found is not None:  # the audit's line, with the wheel it was read from and its chain
            out.append(replace(found, evidence=(*facts.evidence(key), *found.evidence)))
    return out


def wheel_views(facts: ResolvedFacts) -> dict[str, WheelDist]:
    """key -> the wheel's view for each resolved binary wheel whose file list was read."""

    out = {}
    for key, files in facts.wheel_files.items():
        if isinstance(files, str) or key not in facts.locked:
            continue
        pkg = facts.locked[key]
        elves = facts.wheel_elves.get(key)
        view = WheelDist(
            key,
            pkg.version,
            tuple(str(r) for r in pkg.requires or ()),
            files,
            [SharedObject(p, i) for p, i in elves.objects] if elves else [],
            list(elves.kernels) if elves else [],
            gpu_package=elves is not None,
        )
        if view.so_paths:
            view.unread = elves.unread if elves else NOT_A_GPU_PACKAGE
        out[key] = view
    return out

"""G1 at Stage.RESOLVED from what each resolved binary wheel ships (sparkenv lock): its file list (the zip
central directory) and, for GPU packages, what its shared objects link (DT_NEEDED), judged with the
audit's own readings (rules/cuda_per_release.py, cuda_major.shared_object_evidence)."""

from __future__ import annotations

import os
from typing import TYPE_CHECKING

from sparkenv.cuda import rules
from sparkenv.report import Finding, GotchaId, Status
from sparkenv.rules import cuda_major
from sparkenv.rules.g1_declared import fix_for
from sparkenv.rules.g1_installed import _cap, _short

if TYPE_CHECKING:
    from sparkenv.facts.resolved import ResolvedFacts


def resolved_wheel_files(facts: ResolvedFacts) -> list[Finding]:
    """What each resolved binary wheel ships, read from its file list at lock: the per-CUDA-release
    libraries judged as the audit judges them installed (rules/cuda_per_release.py), CUDA libraries of
    another major it bundles (INFO: whether its code links them is read from the ELF at audit), and a
    wheel whose list could not be read (INFO, never a silent PASS)."""
    target = rules.target_major()
    out = []
    for key, files in sorted(facts.wheel_files.items()):
        if key in facts.locked:
            found = _wheel_files(facts, key, files, target)
            if found is not None:
                out.append(found)
    return out


def _wheel_files(facts: ResolvedFacts, key: str, files: tuple[str, ...] | str, target: int) -> Finding | None:
    """One resolved wheel's file list (or why it could not be read)."""
    from sparkenv.rules import cuda_per_release

    ev = facts.evidence(key)
    desc = facts.describe(key)
    if isinstance(files, str):
        return Finding(
            id=GotchaId.G1,
            status=Status.INFO,
            summary=f"{desc}: its wheel's file list could not be read ({files}); its libraries are "
            "checked only by `sparkenv audit` after install",
            subject=key,
            evidence=ev,
        )
    got = cuda_per_release.verdict(
        key, files, facts.profile.machine
    )  # first: one of them is loaded, by choice
    if got is None and (linked := _wheel_links(facts, key, desc, ev, target)) is not None:
        return linked
    if got is not None:
        ok, what, fix = got
        return Finding(
            id=GotchaId.G1,
            status=Status.PASS if ok else Status.FAIL,
            summary=f"{desc} {what} (its wheel's file list)",
            subject=key,
            evidence=ev,
            fix=None if ok else fix,
        )
    other = sorted(
        {os.path.basename(f) for f in files if (m := rules.soname_major(os.path.basename(f))) and m != target}
    )
    if not other:
        return None
    return Finding(
        id=GotchaId.G1,
        status=Status.INFO,
        summary=f"{desc} bundles {', '.join(other[:3])}{' …' if len(other) > 3 else ''} (CUDA "
        f"{rules.soname_major(other[0])}): whether its code links it is read from the ELF by "
        "`sparkenv audit` after install",
        subject=key,
        evidence=ev,
    )


def _wheel_links(
    facts: ResolvedFacts, key: str, desc: str, ev: tuple[str, ...], target: int
) -> Finding | None:
    """What the shared objects of a GPU package's wheel link (DT_NEEDED, read at lock), judged with the
    audit's reading of one shared object (cuda_major.shared_object_evidence); unread: an INFO."""
    elves = facts.wheel_elves.get(key)
    if elves is None:
        return None
    found = [e for path, info in elves.objects for e in cuda_major.shared_object_evidence(path, info)]
    needed = [e for e in found if e.kind == "needed"]
    other = [e for e in needed if e.major != target]
    if elves.unread and not other:
        return Finding(
            id=GotchaId.G1,
            status=Status.INFO,
            summary=f"{desc}: what its shared objects link was not all read at lock ({elves.unread}); "
            "`sparkenv audit` reads it after install",
            subject=key,
            evidence=_cap([*ev, *(e.text for e in needed)]),
        )
    if other:
        return Finding(
            id=GotchaId.G1,
            status=cuda_major.OTHER_MAJOR,
            summary=f"{desc} needs CUDA {other[0].major}: {_short(other[0])} (read from its wheel) — target "
            f"is CUDA {target}",
            subject=key,
            evidence=_cap([*ev, *(e.text for e in other)]),
            fix=fix_for(key, "needed", bool(facts.profile.image)),
        )
    if needed:
        return Finding(
            id=GotchaId.G1,
            status=Status.PASS,
            summary=f"{desc} needs CUDA {target}: {_short(needed[0])} (read from its wheel)",
            subject=key,
            evidence=_cap([*ev, *(e.text for e in needed)]),
        )
    return None

"""One native library per CUDA release in one distribution (libX_cuda118.so … libX_cuda130.so), one of
which is loaded at run time by torch.version.cuda: does it carry one for the target's CUDA major?

The same judgement for a wheel's file list at lock (rules/g1.resolved_wheel_files) and an installed
distribution's files at audit (rules/g1.installed): both pass the paths they have, RECORD's or the
wheel's central directory's. The library pattern is data (packages.toml [per_cuda_release]), the first
release that carries a CUDA 13 library is data too ([[cuda13_from]]).
"""

from __future__ import annotations

import os
from collections.abc import Iterable

from sparkenv.cuda import rules
from sparkenv.knowledge import packages


def libraries(paths: Iterable[str]) -> dict[int, list[str]]:
    """CUDA major -> the per-release libraries among `paths` (base names), in path order."""
    regex = packages().per_cuda_release.library_regex
    out: dict[int, list[str]] = {}
    for path in paths:
        name = os.path.basename(path)
        m = regex.search(name)
        if m:
            out.setdefault(rules.cuda_digits_major(m.group(1)), []).append(name)
    return out


def upgrade(key: str, machine: str) -> str:
    """Where a CUDA 13 library comes from, from the dated data when recorded."""
    first = packages().first_cuda13(key, machine)
    if first is None:
        return f"use a {key} release whose {machine} wheel ships a CUDA {rules.target_major()} library"
    return (
        f"upgrade to {key} >= {first.version}, whose {machine} wheels ship a CUDA 13 library ({first.source})"
    )


def verdict(key: str, paths: Iterable[str], machine: str) -> tuple[bool, str, str] | None:
    """(carries one for the target, what it carries, the fix) or None when it has no such libraries."""
    libs = libraries(paths)
    if not libs:
        return None
    target = rules.target_major()
    if target in libs:
        return True, f"carries a CUDA {target} library ({libs[target][0]})", ""
    names = [n for _, found in sorted(libs.items()) for n in found]
    shown = names[0] if len(names) == 1 else f"{names[0]} … {names[-1]}"
    what = (
        f"has no CUDA {target} library among its per-CUDA-release libraries ({shown}); it picks one by "
        "torch.version.cuda at run time"
    )
    return False, what, upgrade(key, machine)

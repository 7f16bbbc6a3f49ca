"""A CPU-only build by class, not by name: a native distribution (it ships shared objects) that asks for
CUDA libraries on another platform only (a Requires-Dist on a CUDA-bound distribution under a marker that
holds on x86_64 Linux, not on the target) and for the target neither requires, ships nor links any CUDA
library. On a Spark it runs on the CPU; torch before 2.11 is the known case. One function for the lock
and the audit: g1_installed.dist_finding.

Not seen: a package whose other-platform wheel bundles CUDA while its metadata names no CUDA requirement
(that wheel's files would have to be read); the data's families (torch, onnxruntime-gpu, jax) are judged
by rules/cuda_builds.py.
"""

from __future__ import annotations

import os
from typing import TYPE_CHECKING

from packaging.utils import canonicalize_name

from sparkenv.cuda import rules
from sparkenv.environment.markers import applies, marker_environment
from sparkenv.rules.cuda_major import _parse_requirement

if TYPE_CHECKING:
    from collections.abc import Iterable

    from sparkenv.facts.dist_view import DistView

_OTHER = {"aarch64": "x86_64", "x86_64": "aarch64"}


def other_platform_cuda(requires: Iterable[str], machine: str) -> tuple[list[str], list[str]]:
    """(the CUDA-bound requirements that hold on the other Linux CPU only, those that hold on `machine`)."""

    here = marker_environment(machine, None)
    there = marker_environment(_OTHER.get(machine, "x86_64"), None)
    elsewhere, local = [], []
    for raw in requires:
        req = _parse_requirement(raw)
        if req is None:
            continue

        key = canonicalize_name(req.name)
        bound = rules.is_cuda_relevant(key) or any(rules.extra_major(e) is not None for e in req.extras)
        if not bound:
            continue
        if applies(req.marker, here):
            local.append(raw)
        elif applies(req.marker, there):
            elsewhere.append(raw.split(";")[0].strip())
    return elsewhere, local


def cuda_files(df: DistView) -> list[str]:
    """Its shared objects that are CUDA libraries (a soname carrying a CUDA major, or a nvidia/cuNN path)."""
    out = []
    for path in df.so_paths:
        base = os.path.basename(path)
        if rules.soname_major(base) is not None or "/cu1" in path.replace("\\", "/"):
            out.append(path)
    return out


def evidence(df: DistView, linked_majors: set[int], machine: str) -> list[str]:
    """Why `df` is a CPU-only build of a GPU-capable distribution on `machine` ([] when it is not one)."""
    if linked_majors or not df.files_known or not df.so_paths:  # pure Python: no build to be CPU-only
        return []
    elsewhere, local = other_platform_cuda(df.requires, machine)
    if not elsewhere or local or cuda_files(df):
        return []
    other = _OTHER.get(machine, "x86_64")
    shown = ", ".join(elsewhere[:3]) + (f" and {len(elsewhere) - 3} more" if len(elsewhere) > 3 else "")
    return [
        f"its Requires-Dist asks for {shown} on {other} only",
        f"its {machine} files list no CUDA library"
        + (" and none of its shared objects links one" if df.shared_objects else ""),
    ]

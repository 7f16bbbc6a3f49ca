"""The GPU code an installed environment's shared objects carry (G7 facts), from fatbin headers only.

One reader for the audit (and so the build's image verification) and the gate. `.nv_fatbin` is read
for every shared object; the data sections only where `.nv_fatbin` alone has no code for the target
GPU (that keeps the audit of a real 846-object torch venv within its speed goal, and still reads the
libraries that embed fatbins as data).
"""

from __future__ import annotations

import os
from collections.abc import Iterable
from typing import Any

from sparkenv.cuda import coverage, fatbin
from sparkenv.report import Status


def read_object(path: str, shown: str, cap: coverage.Capability) -> coverage.ObjectKernels | None:
    """Kernels of one shared object; None when it carries no GPU code (most objects of a venv)."""
    scan = fatbin.scan(path, deep=False)
    if not scan.has_nv_fatbin:
        return None  # not built by nvcc; a damaged or unreadable file is the ELF reader's to report
    if coverage.judge(scan.targets, cap, scan.complete, _payload(scan)).status is not Status.PASS:
        scan = fatbin.scan(path, deep=True)
    return coverage.ObjectKernels(
        shown,
        tuple(sorted(t.name for t in scan.targets)),
        scan.complete,
        scan.problem,
        tuple(scan.sections),
        _payload(scan),
    )


def read_paths(site: str, relpaths: Iterable[str], cap: coverage.Capability) -> list[coverage.ObjectKernels]:
    out = []
    for rel in relpaths:
        found = read_object(os.path.join(site, rel), rel, cap)
        if found is not None:
            out.append(found)
    return out


def _payload(scan: fatbin.KernelScan) -> dict[str, int]:
    return {t.name: n for t, n in scan.payload.items()}


def to_json(objects: Iterable[coverage.ObjectKernels]) -> list[dict[str, Any]]:
    return [
        {
            "path": o.path,
            "targets": list(o.targets),
            "complete": o.complete,
            "problem": o.problem,
            "sections": list(o.sections),
            "payload": dict(o.payload or {}),
        }
        for o in objects
    ]


def from_json(items: Iterable[dict[str, Any]]) -> list[coverage.ObjectKernels]:
    """Objects back from a facts snapshot; tolerant of missing keys (older snapshots)."""
    out = []
    for item in items:
        if not isinstance(item, dict):
            continue
        payload = item.get("payload")
        out.append(
            coverage.ObjectKernels(
                str(item.get("path", "?")),
                tuple(str(t) for t in item.get("targets") or ()),
                bool(item.get("complete", True)),
                item.get("problem"),
                tuple(item.get("sections") or ()),
                {str(k): int(v) for k, v in payload.items()} if isinstance(payload, dict) else None,
            )
        )
    return out

"""The GPU code an installed environment's shared objects carry (G7 facts), from fatbin headers only.

One reader for the audit (and so the build's image verification) and the gate. `.nv_fatbin` is read
for every shared object; the data sections only where `.nv_fatbin` alone has no code for the target
GPU (that keeps the audit of a real 846-object torch venv within its speed goal, and still reads the
libraries that embed fatbins as data).
"""

from __future__ import annotations

import os
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any

from sparkenv import datafiles
from sparkenv.cuda import coverage, fatbin, toolchain
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


def read_triton(site: str, name: str, version: str, env: Mapping[str, str]) -> toolchain.TritonTools:
    """Triton's bundled ptxas releases (read from the files, nothing run) and the variables that
    override them, as `env` sets them."""
    spec = datafiles.load("toolchain")["triton"]
    bundled = {}
    for tool in (spec["default_tool"], spec["blackwell_tool"]):
        path = os.path.join(site, spec["bundled_dir"], tool)
        if os.path.isfile(path):
            bundled[tool] = toolchain.ptxas_release_of_file(path)
    chosen = {v: env[v] for v in (spec["default_env"], spec["blackwell_env"]) if env.get(v)}
    releases = {p: toolchain.ptxas_release_of_file(p) for p in chosen.values()}
    return toolchain.TritonTools(name, version, bundled, chosen, releases)


def triton_to_json(tools: toolchain.TritonTools) -> dict[str, Any]:
    return {
        "name": tools.name,
        "version": tools.version,
        "bundled": dict(tools.bundled),
        "env": dict(tools.env),
        "env_release": dict(tools.env_release),
    }


def triton_from_json(data: Any) -> toolchain.TritonTools | None:
    if not isinstance(data, dict):
        return None
    return toolchain.TritonTools(
        str(data.get("name", "triton")),
        str(data.get("version", "?")),
        dict(data.get("bundled") or {}),
        dict(data.get("env") or {}),
        dict(data.get("env_release") or {}),
    )


def gather(site_dirs: Iterable[str], cap: coverage.Capability, env: Mapping[str, str]) -> dict[str, Any]:
    """The gate's G7 facts: every distribution's objects that carry GPU code, and Triton's ptxas.
    The first distribution of a name on the path wins, as at import time."""
    from sparkenv.environment.distributions import Distribution, iter_distributions

    packages: dict[str, Any] = {}
    seen: set[str] = set()
    triton = None
    objects = 0
    for site in site_dirs:
        for dist in iter_distributions(Path(site)):
            if not isinstance(dist, Distribution) or dist.key in seen:
                continue
            seen.add(dist.key)
            paths = dist.shared_object_paths()
            objects += len(paths)
            found = read_paths(str(site), paths, cap)
            if found:
                packages[dist.key] = {"version": dist.version, "objects": to_json(found)}
            if triton is None and dist.key in ("triton", "pytorch-triton"):
                triton = triton_to_json(read_triton(str(site), dist.name, dist.version, env))
    return {
        "read_for": coverage.cap_text(cap),
        "shared_objects": objects,
        "packages": packages,
        "triton": triton,
    }

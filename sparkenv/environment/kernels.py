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

from sparkenv.core.cache import stat_key
from sparkenv.cuda import coverage, elf, fatbin, toolchain
from sparkenv.knowledge import toolchain as toolchain_data

READER = "fatbin-3"  # bump when what a scan records changes: kept scans of the old reader are not read


class ScanCache:
    """A worker's fatbin scans by path and stat key, in memory, sent as they are to the audit's process
    (sparkenv/audit/scan.py's pool). Not kept between runs: measured, a kept scan saved under 5 % of an
    audit (benchmarks/README.md, "Caches")."""

    def __init__(self) -> None:
        self.entries: dict[str, Any] = {}

    def get(self, path: str, key: list[int] | None, slot: str) -> Any:
        entry = self.entries.get(path)
        return entry.get(slot) if key is not None and entry is not None and entry["key"] == key else None

    def put(self, path: str, key: list[int] | None, slot: str, value: Any) -> None:
        if key is not None:
            self.entries.setdefault(path, {"key": key})[slot] = value


Scans = dict[str, Any]  # a ScanCache entry: {"key": stat key, "shallow": scan, "deep": scan}


def _scan(
    path: str,
    deep: bool,
    key: list[int] | None,
    cache: ScanCache | None,
    scans: Scans | None = None,
    mapped: bool = False,
) -> dict[str, Any]:
    slot = "deep" if deep else "shallow"
    if cache is not None:
        hit = cache.get(path, key, slot)
        if _well_formed(hit):  # a damaged or hand-edited entry is read again, never fatal
            return hit
    if scans is not None and key is not None and scans.get("key") == key and _well_formed(scans.get(slot)):
        found = scans[slot]  # read by another process from this very file (same stat key)
        if cache is not None:
            cache.put(path, key, slot, found)
        return found  # type: ignore[no-any-return]
    scan = fatbin.scan(path, deep=deep, mapped=mapped)
    found = {
        "targets": sorted(t.name for t in scan.targets),
        "complete": scan.complete,
        "problem": scan.problem,
        "sections": list(scan.sections),
        "payload": {t.name: n for t, n in scan.payload.items()},
        "nv_fatbin": scan.has_nv_fatbin,
    }
    if cache is not None:
        cache.put(path, key, slot, found)
    return found


def _well_formed(hit: Any) -> bool:
    """A cached scan has exactly the types _scan writes."""
    return (
        isinstance(hit, dict)
        and isinstance(hit.get("targets"), list)
        and all(isinstance(t, str) for t in hit["targets"])
        and isinstance(hit.get("complete"), bool)
        and (hit.get("problem") is None or isinstance(hit.get("problem"), str))
        and isinstance(hit.get("sections"), list)
        and all(isinstance(t, str) for t in hit["sections"])
        and isinstance(hit.get("payload"), dict)
        and all(isinstance(k, str) and type(v) is int for k, v in hit["payload"].items())
        and isinstance(hit.get("nv_fatbin"), bool)
    )


def read_object(
    path: str,
    shown: str,
    cap: coverage.Capability,
    cache: ScanCache | None = None,
    scans: Scans | None = None,
    mapped: bool = False,
) -> coverage.ObjectKernels | None:
    """Kernels of one shared object; None when it carries no GPU code (most objects of a venv).
    `scans`: what another process read of this path (a ScanCache's entry), used where its stat key is
    this file's; anything it lacks is read here. `mapped`: read through mmap (fatbin.scan: only in a
    process that may die of SIGBUS, the audit's workers)."""
    key = stat_key(path)
    scan = _scan(path, False, key, cache, scans, mapped)
    if not scan["nv_fatbin"]:
        return None  # not built by nvcc; a damaged or unreadable file is the ELF reader's to report
    if not coverage.native(scan["targets"], cap):  # no machine code for it in .nv_fatbin: read deeper
        scan = _scan(path, True, key, cache, scans, mapped)
    return coverage.ObjectKernels(
        shown,
        tuple(scan["targets"]),
        bool(scan["complete"]),
        scan["problem"],
        tuple(scan["sections"]),
        dict(scan["payload"]),
    )


def read_with(
    read: elf.Reader, size: int, shown: str, cap: coverage.Capability
) -> coverage.ObjectKernels | None:
    """Kernels of one shared object read through `read(offset, size)` (a wheel's member at lock, kept in a
    temporary file), exactly as `read_object` reads an installed file: .nv_fatbin first, the data
    sections where it has no code for `cap`. None when it carries no GPU code."""
    scan = fatbin.scan_reader(read, deep=False)
    if not scan.has_nv_fatbin:
        return None
    if not coverage.native(sorted(t.name for t in scan.targets), cap):
        scan = fatbin.scan_reader(read, deep=True)
        if scan.complete:
            fatbin.sparse_fatbins(scan, size)
    return coverage.ObjectKernels(
        shown,
        tuple(sorted(t.name for t in scan.targets)),
        scan.complete,
        scan.problem,
        tuple(scan.sections),
        {t.name: n for t, n in scan.payload.items()},
    )


def read_bytes(data: bytes, shown: str, cap: coverage.Capability) -> coverage.ObjectKernels | None:
    return read_with(lambda offset, size: data[offset : offset + size], len(data), shown, cap)


def read_paths(
    site: str, relpaths: Iterable[str], cap: coverage.Capability, cache: ScanCache | None = None
) -> list[coverage.ObjectKernels]:
    out = []
    for rel in relpaths:
        found = read_object(os.path.join(site, rel), rel, cap, cache)
        if found is not None:
            out.append(found)
    return out


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


TRITON_NAMES = ("triton", "pytorch-triton")  # canonical names a Triton install goes by


def read_triton(site: str, name: str, version: str, env: Mapping[str, str]) -> toolchain.TritonTools:
    """Triton's bundled ptxas releases (read from the files, nothing run) and the variables that
    override them, as `env` sets them."""
    spec = toolchain_data().triton
    bundled = {}
    for tool in (spec.default_tool, spec.blackwell_tool):
        path = os.path.join(site, spec.bundled_dir, tool)
        if os.path.isfile(path):
            bundled[tool] = toolchain.ptxas_release_of_file(path)
    chosen = {v: env[v] for v in (spec.default_env, spec.blackwell_env) if env.get(v)}
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
    """The gate's G7 facts under --deep: every distribution's objects that carry GPU code, and Triton's
    ptxas. The first distribution of a name on the path wins, as at import time."""
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
            if triton is None and dist.key in TRITON_NAMES:
                triton = triton_to_json(read_triton(str(site), dist.name, dist.version, env))
    return {
        "read_for": coverage.cap_text(cap),
        "shared_objects": objects,
        "packages": packages,
        "triton": triton,
    }


def gather_triton(
    installed: Mapping[str, tuple[str, str]], cap: coverage.Capability, env: Mapping[str, str]
) -> dict[str, Any]:
    """The default gate's G7 facts: Triton's ptxas only (`packages` is None: the default gate's budget
    has no room for every fatbin). `installed`: canonical name -> (version, site folder), the first
    on the path of each name, in path order, as the folder listing gives it (no metadata is opened)."""
    triton = None
    found = next((n for n in installed if n in TRITON_NAMES), None)
    if found is not None:
        version, site = installed[found]
        triton = triton_to_json(read_triton(site, found, version, env))
    return {"read_for": coverage.cap_text(cap), "shared_objects": None, "packages": None, "triton": triton}

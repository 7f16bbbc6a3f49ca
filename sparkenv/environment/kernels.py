"""The GPU code an installed environment's shared objects carry (G7 facts), from fatbin headers only.

One reader for the audit (and so the build's image verification) and the gate. `.nv_fatbin` is read
for every shared object; the data sections only where `.nv_fatbin` alone has no code for the target
GPU (that keeps the audit of a real 846-object torch venv within its speed goal, and still reads the
libraries that embed fatbins as data).
"""

from __future__ import annotations

import contextlib
import json
import os
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any

from sparkenv.cuda import coverage, fatbin, toolchain
from sparkenv.knowledge import kernels
from sparkenv.knowledge import toolchain as toolchain_data
from sparkenv.report import Status

READER = "fatbin-3"  # bump when what a scan records changes: older cache files are then ignored


class ScanCache:
    """Fatbin scans keyed by (path, size, mtime_ns, inode), kept in the cache folder
    (sparkenv/cache.py) as kernels.json: an audit or gate re-reads only what changed. Never fatal: an
    unreadable or unusable cache is just not used."""

    def __init__(self, path: Path | None) -> None:
        self.path, self.entries, self.dirty = path, {}, False
        if path is None:
            return
        try:
            data = json.loads(path.read_text(encoding="utf-8"))
        except (OSError, ValueError):
            return
        if isinstance(data, dict) and data.get("reader") == _reader_key():
            entries = data.get("entries")
            self.entries = entries if isinstance(entries, dict) else {}

    @staticmethod
    def default() -> ScanCache:
        from sparkenv import cache
        from sparkenv.errors import SparkenvError

        try:
            return ScanCache(cache.folder() / "kernels.json")
        except SparkenvError:
            return ScanCache(None)

    def get(self, path: str, key: list[int], deep: bool) -> dict[str, Any] | None:
        entry = self.entries.get(path)
        if not isinstance(entry, dict) or entry.get("key") != key:
            return None
        found = entry.get("deep" if deep else "shallow")
        return found if isinstance(found, dict) else None

    def put(self, path: str, key: list[int], deep: bool, scan: dict[str, Any]) -> None:
        entry = self.entries.get(path)
        if not isinstance(entry, dict) or entry.get("key") != key:
            entry = self.entries[path] = {"key": key}
        entry["deep" if deep else "shallow"] = scan
        self.dirty = True

    def save(self) -> None:
        if self.path is None or not self.dirty:
            return
        # entries of files that are gone (a removed venv, a test's temporary folder) are dropped
        self.entries = {p: e for p, e in self.entries.items() if os.path.exists(p)}
        tmp = self.path.with_name(f".{self.path.name}.{os.getpid()}.tmp")
        try:
            tmp.write_text(json.dumps({"reader": _reader_key(), "entries": self.entries}), encoding="utf-8")
            os.replace(tmp, self.path)
            self.dirty = False
        except OSError:
            with contextlib.suppress(OSError):
                tmp.unlink()


def _reader_key() -> str:
    data = kernels()
    parts = [part._asdict() for part in (data.sections, data.limits, data.sparse)]
    return f"{READER} {json.dumps(parts, sort_keys=True)}"


def _scan(path: str, deep: bool, key: list[int] | None, cache: ScanCache | None) -> dict[str, Any]:
    if cache is not None and key is not None:
        hit = cache.get(path, key, deep)
        if hit is not None:
            return hit
    scan = fatbin.scan(path, deep=deep)
    found = {
        "targets": sorted(t.name for t in scan.targets),
        "complete": scan.complete,
        "problem": scan.problem,
        "sections": list(scan.sections),
        "payload": {t.name: n for t, n in scan.payload.items()},
        "nv_fatbin": scan.has_nv_fatbin,
    }
    if cache is not None and key is not None:
        cache.put(path, key, deep, found)
    return found


def read_object(
    path: str, shown: str, cap: coverage.Capability, cache: ScanCache | None = None
) -> coverage.ObjectKernels | None:
    """Kernels of one shared object; None when it carries no GPU code (most objects of a venv)."""
    try:
        st = os.stat(path)
        key: list[int] | None = [st.st_size, st.st_mtime_ns, st.st_ino]
    except OSError:
        key = None
    scan = _scan(path, False, key, cache)
    if not scan["nv_fatbin"]:
        return None  # not built by nvcc; a damaged or unreadable file is the ELF reader's to report
    if coverage.judge(scan["targets"], cap, scan["complete"], scan["payload"]).status is not Status.PASS:
        scan = _scan(path, True, key, cache)
    return coverage.ObjectKernels(
        shown,
        tuple(scan["targets"]),
        bool(scan["complete"]),
        scan["problem"],
        tuple(scan["sections"]),
        dict(scan["payload"]),
    )


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


def gather(
    site_dirs: Iterable[str], cap: coverage.Capability, env: Mapping[str, str], *, read_kernels: bool = True
) -> dict[str, Any]:
    """The gate's G7 facts: every distribution's objects that carry GPU code, and Triton's ptxas.
    The first distribution of a name on the path wins, as at import time. Without `read_kernels` only
    Triton's ptxas is read (`packages` is None): the default gate's budget has no room for every fatbin."""
    from sparkenv.environment.distributions import Distribution, iter_distributions

    cache = ScanCache.default()
    packages: dict[str, Any] = {}
    seen: set[str] = set()
    triton = None
    objects = 0
    for site in site_dirs:
        for dist in iter_distributions(Path(site)):
            if not isinstance(dist, Distribution) or dist.key in seen:
                continue
            seen.add(dist.key)
            if read_kernels:
                paths = dist.shared_object_paths()
                objects += len(paths)
                found = read_paths(str(site), paths, cap, cache)
                if found:
                    packages[dist.key] = {"version": dist.version, "objects": to_json(found)}
            if triton is None and dist.key in ("triton", "pytorch-triton"):
                triton = triton_to_json(read_triton(str(site), dist.name, dist.version, env))
    return {
        "read_for": coverage.cap_text(cap),
        "shared_objects": objects if read_kernels else None,
        "packages": packages if read_kernels else None,
        "triton": triton,
    }

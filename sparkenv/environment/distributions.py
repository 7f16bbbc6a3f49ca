"""Installed distributions read from their .dist-info / .egg-info folders, without importing anything."""

from __future__ import annotations

import csv
import os
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path

from packaging.utils import canonicalize_name


@dataclass(frozen=True)
class Distribution:
    name: str
    key: str  # PEP 503 normalized name
    version: str
    meta_dir: Path
    site_dir: Path
    requires: tuple[str, ...]  # raw Requires-Dist values
    files: tuple[str, ...] | None  # paths relative to site_dir; None when the installer left no list
    notes: tuple[str, ...] = field(default=())  # what could not be read, for the evidence

    def read_meta(self, name: str) -> str | None:
        try:
            return (self.meta_dir / name).read_text(encoding="utf-8", errors="replace")
        except OSError:
            return None


@dataclass(frozen=True)
class MetadataProblem:
    path: Path
    reason: str


def iter_distributions(site_dir: Path) -> Iterator[Distribution | MetadataProblem]:
    try:
        names = sorted(os.listdir(site_dir))
    except OSError as exc:
        yield MetadataProblem(site_dir, f"cannot list folder: {exc.strerror}")
        return
    for name in names:
        if name.endswith(".dist-info"):
            yield _read_dist_info(site_dir, site_dir / name)
        elif name.endswith(".egg-info"):
            yield _read_egg_info(site_dir, site_dir / name)


def parse_headers(text: str) -> dict[str, list[str]]:
    """RFC 822 style core-metadata headers (the part before the body), multi-valued."""
    headers: dict[str, list[str]] = {}
    last: list[str] | None = None
    for line in text.splitlines():
        if not line.strip():
            break
        if line[0] in " \t" and last is not None:
            last[-1] += " " + line.strip()
            continue
        key, sep, value = line.partition(":")
        if not sep:
            continue
        last = headers.setdefault(key.strip().lower(), [])
        last.append(value.strip())
    return headers


def _identity(headers: dict[str, list[str]], where: Path, file: str) -> tuple[str, str] | MetadataProblem:
    name = (headers.get("name") or [""])[0]
    version = (headers.get("version") or [""])[0]
    if not name:
        return MetadataProblem(where / file, f"{file} has no Name field")
    if not version:
        return MetadataProblem(where / file, f"{file} has no Version field")
    return name, version


def _read_dist_info(site_dir: Path, meta_dir: Path) -> Distribution | MetadataProblem:
    try:
        text = (meta_dir / "METADATA").read_text(encoding="utf-8", errors="replace")
    except OSError as exc:
        return MetadataProblem(meta_dir / "METADATA", f"unreadable METADATA: {exc.strerror}")
    headers = parse_headers(text)
    ident = _identity(headers, meta_dir, "METADATA")
    if isinstance(ident, MetadataProblem):
        return ident
    files, notes = _record(meta_dir)
    return Distribution(
        ident[0],
        canonicalize_name(ident[0]),
        ident[1],
        meta_dir,
        site_dir,
        tuple(headers.get("requires-dist", [])),
        files,
        notes,
    )


def _record(meta_dir: Path) -> tuple[tuple[str, ...] | None, tuple[str, ...]]:
    try:
        with open(meta_dir / "RECORD", encoding="utf-8", errors="replace", newline="") as fh:
            return tuple(row[0] for row in csv.reader(fh) if row and row[0]), ()
    except FileNotFoundError:
        return None, ("no RECORD: installed files unknown",)
    except (OSError, csv.Error) as exc:
        return None, (f"RECORD unreadable: {exc}",)


def _read_egg_info(site_dir: Path, meta: Path) -> Distribution | MetadataProblem:
    is_dir = meta.is_dir()
    pkg_info = meta / "PKG-INFO" if is_dir else meta
    try:
        text = pkg_info.read_text(encoding="utf-8", errors="replace")
    except OSError as exc:
        return MetadataProblem(pkg_info, f"unreadable PKG-INFO: {exc.strerror}")
    ident = _identity(parse_headers(text), meta if is_dir else meta.parent, "PKG-INFO")
    if isinstance(ident, MetadataProblem):
        return ident
    requires: list[str] = []
    files: tuple[str, ...] | None = None
    if is_dir:
        requires = _egg_requires(meta / "requires.txt")
        try:
            listed = (meta / "installed-files.txt").read_text(encoding="utf-8", errors="replace").splitlines()
            files = tuple(os.path.normpath(os.path.join(meta.name, p)) for p in listed if p.strip())
        except OSError:
            files = None
    notes = () if files is not None else ("egg-info without installed-files.txt: installed files unknown",)
    return Distribution(
        ident[0], canonicalize_name(ident[0]), ident[1], meta, site_dir, tuple(requires), files, notes
    )


def _egg_requires(path: Path) -> list[str]:
    """requires.txt: plain lines, then [extra] or [:marker] sections; optional extras are skipped."""
    try:
        lines = path.read_text(encoding="utf-8", errors="replace").splitlines()
    except OSError:
        return []
    out: list[str] = []
    marker: str | None = None
    for line in lines:
        line = line.strip()
        if not line or line.startswith("#"):
            continue
        if line.startswith("["):
            section = line.strip("[]")
            extra, _, cond = section.partition(":")
            marker = None if extra else cond
            if extra:
                marker = "__extra__"
            continue
        if marker == "__extra__":
            continue
        out.append(f"{line}; {marker}" if marker else line)
    return out

"""Installed distributions read from their .dist-info / .egg-info folders, without importing anything."""

from __future__ import annotations

import os
import re
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field, replace
from pathlib import Path

from sparkenv.core import safe_read
from sparkenv.core.names import canonical

# RECORD rows are "path,hash,size". Shared objects are found by searching the whole text for the end of
# a path like ".so," or ".so.12,", not by a csv row loop: a real CUDA venv lists tens of thousands of
# files and only a few hundred matter here (a line-anchored regex backtracks through every path).
_SO_END = re.compile(r"\.so(?:\.[0-9][\w.]*)?,")
_QUOTED_ROW = re.compile(r'^"', re.M)
_SO_QUOTED = re.compile(r'^"((?:[^"]|"")*\.so(?:\.[0-9][\w.]*)?)",', re.M)


@dataclass(frozen=True)
class Distribution:
    name: str
    key: str  # PEP 503 normalized name
    version: str
    meta_dir: Path
    site_dir: Path
    requires: tuple[str, ...]  # raw Requires-Dist values
    record: str | None  # RECORD text ("path,hash,size" rows, paths relative to site_dir); None: unknown
    notes: tuple[str, ...] = field(default=())  # what could not be read, for the evidence

    @property
    def files_known(self) -> bool:
        return self.record is not None

    def shared_object_paths(self) -> list[str]:
        """Installed paths named like shared objects (libx.so, libx.so.12, _C.cpython-312-….so)."""
        if not self.record:
            return []
        text = self.record
        found = []
        for m in _SO_END.finditer(text):
            path = text[text.rfind("\n", 0, m.start()) + 1 : m.end() - 1]
            if "," not in path and not path.startswith('"'):  # the first field of its row, unquoted
                found.append(path)
        if '"' in text:  # csv quoting only where a path holds a comma or a quote
            found += [quoted.replace('""', '"') for quoted in _SO_QUOTED.findall(self.record)]
        return found

    def reduced(self, needles: Iterable[str]) -> Distribution:
        """The same distribution with only the RECORD rows that `shared_object_paths` and
        `path_containing(needle)` read, in order (a row before the first match of a needle does not hold
        it): what the audit's cache keeps of a RECORD of tens of thousands of rows."""
        text = self.record
        if not text:
            return self
        starts = {text.rfind("\n", 0, m.start()) + 1 for m in _SO_END.finditer(text)}
        if '"' in text:
            starts.update(m.start() for m in _QUOTED_ROW.finditer(text))
        for needle in needles:
            at = text.find(needle)
            if at >= 0:
                starts.add(text.rfind("\n", 0, at) + 1)
        rows = []
        for start in sorted(starts):
            end = text.find("\n", start)
            rows.append(text[start:] if end < 0 else text[start : end + 1])
        return replace(self, record="".join(rows))

    def path_containing(self, needle: str) -> str | None:
        """The first installed path that contains `needle`."""
        if not self.record:
            return None
        at = self.record.find(needle)
        if at < 0:
            return None
        start = self.record.rfind("\n", 0, at) + 1
        return self.record[start : self.record.find(",", at)]

    def read_meta(self, name: str) -> str | None:
        try:
            return _read(self.meta_dir / name, name)
        except safe_read.UnreadableFile:
            return None


@dataclass(frozen=True)
class MetadataProblem:
    path: Path
    reason: str


def _read(path: Path, what: str) -> str:
    """Metadata of someone else's package: read safely (FIFOs, devices, huge files refused); bad bytes are
    replaced, since these files are only read for names, versions and paths."""
    article = "an" if what[0] in "aeiouAEIOU" else "a"
    return safe_read.read_text(path, what=f"{article} {what} file", errors="replace")


def iter_distributions(site_dir: Path, read_files: bool = True) -> Iterator[Distribution | MetadataProblem]:
    names = metadata_names(site_dir)
    if isinstance(names, MetadataProblem):
        yield names
        return
    for name in names:
        yield read_one(site_dir, name, read_files)


def metadata_names(site_dir: Path) -> list[str] | MetadataProblem:
    """The .dist-info and .egg-info entries of a site folder, in the order they are read."""
    try:
        names = sorted(os.listdir(site_dir))
    except OSError as exc:
        return MetadataProblem(site_dir, f"cannot list folder: {exc.strerror}")
    return [n for n in names if n.endswith((".dist-info", ".egg-info"))]


def read_one(site_dir: Path, name: str, read_files: bool = True) -> Distribution | MetadataProblem:
    if name.endswith(".dist-info"):
        return _read_dist_info(site_dir, site_dir / name, read_files)
    return _read_egg_info(site_dir, site_dir / name)


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


def _file_identity(headers: dict[str, list[str]], meta: Path) -> tuple[str, str] | MetadataProblem:
    """A single-file egg-info is named in the problem as itself, not as a PKG-INFO beside it."""
    ident = _identity(headers, meta.parent, "PKG-INFO")
    if isinstance(ident, MetadataProblem):
        return MetadataProblem(meta, ident.reason.replace("PKG-INFO", "egg-info file", 1))
    return ident


def _read_dist_info(
    site_dir: Path, meta_dir: Path, read_files: bool = True
) -> Distribution | MetadataProblem:
    try:
        text = _read(meta_dir / "METADATA", "METADATA")
    except safe_read.UnreadableFile as exc:
        return MetadataProblem(meta_dir / "METADATA", f"unreadable METADATA: {exc.reason}")
    headers = parse_headers(text)
    ident = _identity(headers, meta_dir, "METADATA")
    if isinstance(ident, MetadataProblem):
        return ident
    record, notes = _record(meta_dir) if read_files else (None, ())
    return Distribution(
        ident[0],
        canonical(ident[0]),
        ident[1],
        meta_dir,
        site_dir,
        tuple(headers.get("requires-dist", [])),
        record,
        notes,
    )


def _record(meta_dir: Path) -> tuple[str | None, tuple[str, ...]]:
    path = meta_dir / "RECORD"
    if not os.path.lexists(path):
        return None, ("no RECORD: installed files unknown",)
    try:
        return _read(path, "RECORD"), ()
    except safe_read.UnreadableFile as exc:
        return None, (f"RECORD unreadable: {exc.reason}",)


def _read_egg_info(site_dir: Path, meta: Path) -> Distribution | MetadataProblem:
    # An .egg-info is a folder holding PKG-INFO, or (distutils) a single file that is the PKG-INFO.
    is_dir = meta.is_dir()
    pkg_info = meta / "PKG-INFO" if is_dir else meta
    label = "PKG-INFO" if is_dir else "egg-info"
    try:
        text = _read(pkg_info, label)
    except safe_read.UnreadableFile as exc:
        return MetadataProblem(pkg_info, f"unreadable {label}: {exc.reason}")
    headers = parse_headers(text)
    ident = _identity(headers, meta, "PKG-INFO") if is_dir else _file_identity(headers, meta)
    if isinstance(ident, MetadataProblem):
        return ident
    requires: list[str] = []
    record: str | None = None
    if is_dir:
        requires = _egg_requires(meta / "requires.txt")
        try:
            listed = _read(meta / "installed-files.txt", "installed-files.txt").splitlines()
            # the same shape as RECORD, paths made relative to the site folder
            record = "".join(
                f"{os.path.normpath(os.path.join(meta.name, p))},,\n" for p in listed if p.strip()
            )
        except safe_read.UnreadableFile:
            record = None
    notes = () if record is not None else ("egg-info without installed-files.txt: installed files unknown",)
    return Distribution(
        ident[0], canonical(ident[0]), ident[1], meta, site_dir, tuple(requires), record, notes
    )


def _egg_requires(path: Path) -> list[str]:
    """requires.txt: plain lines, then [extra] or [:marker] sections; optional extras are skipped."""
    try:
        lines = _read(path, "requires.txt").splitlines()
    except safe_read.UnreadableFile:
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

"""What the last audit of an environment read and judged, remembered in the store "audit"
(sparkenv/core/cache.py) by a digest of the target, so that an unchanged environment audits from the
cache and a changed one re-reads only what changed.

Two levels, each keyed by everything that can change it:

- the report: reused only when the whole fingerprint is the same — the stat (size, mtime_ns, ctime_ns,
  inode) of every site folder, every .dist-info/.egg-info folder and every file in it, every shared
  object its RECORD lists, Triton's ptxas binaries, the SDPA override's .pth, pyvenv.cfg and the lock;
  the names in each site folder; and the header: sparkenv's version and the stat of its own modules,
  the interpreter running it, the data files' hashes, the target, --lock (its stat), --root and its
  markers, --gpu and the TRITON_ variables. Any difference and the rules run again;
- per distribution (its metadata folder's stat and its files' stats) and per shared object (its stat):
  what was read from them. What changed is read again; the rest comes from here.

A change of any file changes its ctime, which no user can set back, so a changed file is never taken for
an unchanged one. The cache is never trusted: an entry the store does not take, or whose header does not
match, or whose contents do not have the expected shape, is ignored whole and rewritten after the audit; a
cache that cannot be written is skipped. Nothing in it can turn a FAIL into a PASS, because nothing in
it is used for a file whose stat differs from the one it was read under.
"""

from __future__ import annotations

import hashlib
import json
import os
import sys
from collections.abc import Iterable
from pathlib import Path
from typing import Any

from sparkenv.core.cache import Store, stat_key

STORE = Store("audit", "1")  # core/cache.py; bump the version when what is remembered changes
_SPARKENV = Path(__file__).resolve().parent.parent
# the modules whose code decides what an audit reads and judges: an edited checkout is a new reader
_CODE_DIRS = ("audit", "rules", "cuda", "environment", "facts", "knowledge", "render")


def _digest(text: str) -> str:
    return hashlib.sha256(text.encode("utf-8", "surrogateescape")).hexdigest()


def _code_and_data() -> list[Any]:
    from sparkenv import __version__

    parts: list[Any] = [__version__, sys.version, sys.executable]
    for sub in _CODE_DIRS:
        folder = _SPARKENV / sub
        try:
            names = sorted(n for n in os.listdir(folder) if n.endswith(".py"))
        except OSError:
            names = []
        parts += [[sub, n, stat_key(str(folder / n))] for n in names]
    data = _SPARKENV / "data"
    try:
        tomls = sorted(n for n in os.listdir(data) if n.endswith(".toml"))
    except OSError:
        tomls = []
    for name in tomls:
        try:
            parts.append([name, hashlib.sha256((data / name).read_bytes()).hexdigest()])
        except OSError:
            parts.append([name, None])
    return parts


def header(target: Any, lock: str | None, root: Path, gpu: Any, markers: Any) -> str:
    """What the whole cache depends on besides the environment's files (see the module's text)."""
    env = sorted((k, v) for k, v in os.environ.items() if k.startswith("TRITON_"))
    # the lock by its stat, never read here: a FIFO or a device named by --lock is refused by the lock
    # reader on the miss that must come first, with its one-line error
    lock_key = stat_key(lock) if lock else None
    parts = [
        STORE.version,
        _code_and_data(),
        [target.description, target.machine, target.python_version, str(target.interpreter)],
        [str(d) for d in target.site_dirs],
        [lock, lock_key, str(root), repr(markers), repr(gpu), env],
    ]
    return _digest(json.dumps(parts, default=str))


def meta_key(meta_dir: str) -> list[Any] | None:
    """A .dist-info/.egg-info folder's stat and the stat of every file in it (an .egg-info file: its
    stat). Rewriting RECORD in place leaves the folder's mtime alone; the file's own stat changes."""
    own = stat_key(meta_dir)
    if own is None:
        return None
    try:
        names = sorted(os.listdir(meta_dir))
    except NotADirectoryError:
        return [own]
    except OSError:
        return None
    return [own, *([n, stat_key(os.path.join(meta_dir, n))] for n in names)]


def _site_key(site: str) -> list[Any]:
    try:
        names = sorted(os.listdir(site))
    except OSError as exc:
        return [stat_key(site), exc.errno]
    wanted = [n for n in names if n.endswith((".dist-info", ".egg-info", ".pth"))]
    return [stat_key(site), wanted]


class Memo:
    """One environment's remembered audit, in two files: the report (all an unchanged environment's
    audit reads) and the facts per distribution and per shared object (read only when something
    changed). Neither `load` nor `save` ever raises."""

    def __init__(self, key: str | None, header_digest: str) -> None:
        self.key, self.header = key, header_digest
        self.report: dict[str, Any] | None = None  # {"fingerprint", "findings", "context", "paths"}
        self._dists: dict[str, dict[str, Any]] | None = None  # loaded on first use (a miss)
        self._elf: dict[str, dict[str, Any]] = {}
        self.used: set[str] = set()  # entries read or written this run: only these are kept
        # the stats taken before each file was read this run: what the remembered report was made from
        self.sites: list[Any] = []
        self.taken: dict[str, Any] = {}
        data = self._read(key)
        report = data.get("report") if data else None
        self.report = report if isinstance(report, dict) else None

    @classmethod
    def for_target(cls, header_digest: str, site_dirs: Iterable[Path]) -> Memo:
        return cls(_digest(json.dumps([str(d) for d in site_dirs]))[:16], header_digest)

    def _read(self, key: str | None) -> dict[str, Any] | None:
        """The entry's data when it was written under this header, else None (ignored whole)."""
        data = STORE.load(key) if key is not None else None
        return data if isinstance(data, dict) and data.get("header") == self.header else None

    def _load_facts(self) -> dict[str, dict[str, Any]]:
        if self._dists is None:
            data = self._read(f"{self.key}.facts" if self.key else None) or {}
            dists, elf = data.get("dists"), data.get("elf")
            ok = isinstance(dists, dict) and isinstance(elf, dict)
            self._dists = dists if ok else {}  # type: ignore[assignment]
            self._elf = elf if ok else {}  # type: ignore[assignment]
        return self._dists  # type: ignore[return-value]

    # -- the report ---------------------------------------------------------------------------------

    @staticmethod
    def _fingerprint(sites: list[Any], metas: dict[str, Any], files: dict[str, Any]) -> str:
        return _digest(json.dumps({"sites": sites, "metas": metas, "files": files}, sort_keys=True))

    def start(self, site_dirs: Iterable[Path]) -> list[Any]:
        """The site folders' keys, taken before anything is listed or read."""
        self.sites = [_site_key(str(d)) for d in site_dirs]
        return self.sites

    def report_if_unchanged(self, site_dirs: list[Path]) -> dict[str, Any] | None:
        """The remembered findings and context when nothing they depend on changed, else None."""
        report = self.report
        sites = self.start(site_dirs)
        if report is None:
            return None
        paths = report.get("paths")
        if not isinstance(paths, dict) or not all(
            isinstance(paths.get(k), list) and all(isinstance(p, str) for p in paths[k])
            for k in ("metas", "files")
        ):
            return None
        now = self._fingerprint(
            sites,
            {m: meta_key(m) for m in paths["metas"]},
            {p: stat_key(p) for p in paths["files"]},
        )
        if report.get("fingerprint") != now:
            return None
        if not isinstance(report.get("findings"), list) or not isinstance(report.get("context"), dict):
            return None
        return report

    def remember(
        self, metas: list[str], files: list[str], findings: list[dict[str, Any]], context: dict[str, Any]
    ) -> None:
        """Keep the report under the stats taken before its files were read (a file changed during
        the audit then differs next time), and the stat now of what was not read through here."""
        fingerprint = self._fingerprint(
            self.sites,
            {m: self.taken[m] if m in self.taken else meta_key(m) for m in metas},
            {p: self.taken[p] if p in self.taken else stat_key(p) for p in files},
        )
        self.report = {
            "fingerprint": fingerprint,
            "paths": {"metas": metas, "files": files},
            "findings": findings,
            "context": context,
        }

    # -- per distribution and per shared object ---------------------------------------------------------

    def knows(self, path: str) -> bool:
        """Whether an entry for `path` (a metadata folder or a shared object) is kept, of any stat: one
        without is surely read this run (the audit hands it to its workers)."""
        return path in self._load_facts() or path in self._elf

    def dist(self, meta_dir: str, key: list[Any] | None) -> dict[str, Any] | None:
        self.taken[meta_dir] = key
        entry = self._load_facts().get(meta_dir)
        if key is None or not isinstance(entry, dict) or entry.get("key") != key:
            return None
        self.used.add(meta_dir)
        return entry

    def put_dist(self, meta_dir: str, key: list[Any] | None, value: dict[str, Any]) -> None:
        if key is not None:
            self._load_facts()[meta_dir] = {**value, "key": key}
            self.used.add(meta_dir)

    def elf_info(self, path: str, key: list[int] | None) -> Any:
        self.taken[path] = key
        self._load_facts()
        entry = self._elf.get(path)
        if key is None or not isinstance(entry, dict) or entry.get("key") != key or "info" not in entry:
            return None
        self.used.add(path)
        return entry["info"]

    def put_elf(self, path: str, key: list[int] | None, info: Any) -> None:
        if key is not None:
            self._load_facts()
            self._elf[path] = {"key": key, "info": info}
            self.used.add(path)

    def save(self) -> None:
        if self.key is None:
            return
        dists = self._load_facts()
        STORE.save(self.key, {"header": self.header, "report": self.report})
        used = {"dists": dists, "elf": self._elf}
        facts = {k: {p: v for p, v in d.items() if p in self.used} for k, d in used.items()}
        STORE.save(f"{self.key}.facts", {"header": self.header, **facts})

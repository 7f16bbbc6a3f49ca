"""What the last audit of an environment read and judged, remembered in the cache folder
(sparkenv/cache.py, `audit-<digest of the target>.json`), so that an unchanged environment audits from
the cache and a changed one re-reads only what changed.

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
an unchanged one. The cache is never trusted: a file whose checksum, reader or header does not match,
or whose contents do not have the expected shape, is ignored as a whole and rewritten after the audit; a
cache that cannot be written is skipped. Nothing in it can turn a FAIL into a PASS, because nothing in
it is used for a file whose stat differs from the one it was read under.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
import sys
from collections.abc import Iterable
from pathlib import Path
from typing import Any

from sparkenv.stat_cache import stat_key

READER = "audit-memo-1"  # bump when what is remembered changes: older files are then ignored
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
        READER,
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
    """One environment's remembered audit. `load` never raises; `save` never raises."""

    def __init__(self, path: Path | None, header_digest: str) -> None:
        self.path, self.header = path, header_digest
        self.report: dict[str, Any] | None = None  # {"fingerprint", "findings", "context", "paths"}
        self.dists: dict[str, dict[str, Any]] = {}
        self.elf: dict[str, dict[str, Any]] = {}
        self.loaded = False
        self.used: set[str] = set()  # entries read or written this run: only these are kept
        self._load()

    @classmethod
    def for_target(cls, header_digest: str, site_dirs: Iterable[Path]) -> Memo:
        from sparkenv import cache
        from sparkenv.errors import SparkenvError

        name = f"audit-{_digest(json.dumps([str(d) for d in site_dirs]))[:16]}.json"
        try:
            return cls(cache.folder() / name, header_digest)
        except SparkenvError:
            return cls(None, header_digest)

    def _load(self) -> None:
        if self.path is None:
            return
        try:
            raw = self.path.read_text(encoding="utf-8")
            body, _, check = raw.rpartition("\n")
            if _digest(body) != check:
                return  # truncated, edited or damaged: ignored as a whole
            data = json.loads(body)
        except (OSError, ValueError, RecursionError):
            return
        if not isinstance(data, dict) or data.get("reader") != READER or data.get("header") != self.header:
            return
        dists, elf, report = data.get("dists"), data.get("elf"), data.get("report")
        if not isinstance(dists, dict) or not isinstance(elf, dict):
            return
        self.dists, self.elf = dists, elf
        self.report = report if isinstance(report, dict) else None
        self.loaded = True

    # -- the report ---------------------------------------------------------------------------------

    def fingerprint(self, site_dirs: Iterable[Path], paths: dict[str, Any]) -> str:
        """The digest of every stat the report depends on; `paths` as `remember` stored them."""
        parts: list[Any] = [_site_key(str(d)) for d in site_dirs]
        parts += [[m, meta_key(m)] for m in paths.get("metas", [])]
        parts += [[p, stat_key(p)] for p in paths.get("files", [])]
        return _digest(json.dumps(parts))

    def report_if_unchanged(self, site_dirs: list[Path]) -> dict[str, Any] | None:
        """The remembered findings and context when nothing they depend on changed, else None."""
        report = self.report
        if report is None:
            return None
        paths = report.get("paths")
        if not isinstance(paths, dict) or not all(
            isinstance(paths.get(k), list) and all(isinstance(p, str) for p in paths[k])
            for k in ("metas", "files")
        ):
            return None
        if report.get("fingerprint") != self.fingerprint(site_dirs, paths):
            return None
        if not isinstance(report.get("findings"), list) or not isinstance(report.get("context"), dict):
            return None
        return report

    def remember(
        self,
        site_dirs: list[Path],
        metas: list[str],
        files: list[str],
        findings: list[dict[str, Any]],
        context: dict[str, Any],
    ) -> None:
        paths = {"metas": metas, "files": files}
        self.report = {
            "fingerprint": self.fingerprint(site_dirs, paths),
            "paths": paths,
            "findings": findings,
            "context": context,
        }

    # -- per distribution and per shared object ---------------------------------------------------------

    def dist(self, meta_dir: str, key: list[Any] | None) -> dict[str, Any] | None:
        entry = self.dists.get(meta_dir)
        if key is None or not isinstance(entry, dict) or entry.get("key") != key:
            return None
        self.used.add(meta_dir)
        return entry

    def put_dist(self, meta_dir: str, key: list[Any] | None, value: dict[str, Any]) -> None:
        if key is not None:
            self.dists[meta_dir] = {**value, "key": key}
            self.used.add(meta_dir)

    def elf_info(self, path: str, key: list[int] | None) -> Any:
        entry = self.elf.get(path)
        if key is None or not isinstance(entry, dict) or entry.get("key") != key or "info" not in entry:
            return None
        self.used.add(path)
        return entry["info"]

    def put_elf(self, path: str, key: list[int] | None, info: Any) -> None:
        if key is not None:
            self.elf[path] = {"key": key, "info": info}
            self.used.add(path)

    def save(self) -> None:
        if self.path is None:
            return
        from sparkenv import outputs

        data = {
            "reader": READER,
            "header": self.header,
            "report": self.report,
            "dists": {k: v for k, v in self.dists.items() if k in self.used},
            "elf": {k: v for k, v in self.elf.items() if k in self.used},
        }
        body = json.dumps(data, separators=(",", ":"))
        with contextlib.suppress(OSError, outputs.OutputError):  # never fatal: then it is just not kept
            outputs.write_one(self.path, f"{body}\n{_digest(body)}")

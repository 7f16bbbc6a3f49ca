"""DT_NEEDED of the shared objects inside the resolved wheels of GPU packages, read at lock, within a
budget: what the audit reads from installed files, known before anything is installed.

A member of a wheel is deflated: its ELF headers, dynamic section and string table can sit anywhere in
it, so a member is read whole (by range requests through the zip) when it is at most PER_OBJECT bytes,
and all members together at most BUDGET bytes per lock. What is left unread is returned with the reason,
and the rule says so (an INFO, never a silent PASS). Results are cached by the wheel's sha256.
"""

from __future__ import annotations

import json
import zipfile

from sparkenv.cuda import elf
from sparkenv.facts.resolved import WheelElves
from sparkenv.resolve import metadata, remote_zip

PER_OBJECT = 64 * 1024**2
BUDGET = 512 * 1024**2
MAX_OBJECTS = 64  # per wheel


class Budget:
    def __init__(self, total: int = BUDGET) -> None:
        self.left = total

    def take(self, size: int) -> bool:
        if size > PER_OBJECT or size > self.left:
            return False
        self.left -= size
        return True


Objects = tuple[tuple[str, elf.ElfInfo], ...]


def _cached(sha256: str) -> Objects | None:
    try:
        data = json.loads((metadata.cache_dir() / f"{sha256}.elf.json").read_text(encoding="utf-8"))
        return tuple((o["path"], elf.ElfInfo(o["machine"], o["soname"], tuple(o["needed"]))) for o in data)
    except (OSError, ValueError, KeyError, TypeError):
        return None


def _store(sha256: str, objects: Objects) -> None:
    rows = [
        {"path": p, "machine": i.machine, "soname": i.soname, "needed": list(i.needed)} for p, i in objects
    ]
    metadata.store(sha256, json.dumps(rows), ".elf.json")


def read_one(ref: metadata.FileRef, paths: tuple[str, ...], budget: Budget, timeout: float) -> WheelElves:
    """The ELF facts of the wheel's shared objects that fit the budget, and what was left unread."""
    if ref.sha256 and (hit := _cached(ref.sha256)) is not None:
        return WheelElves(hit)
    out: list[tuple[str, elf.ElfInfo]] = []
    skipped: list[str] = []
    try:
        fh, _ = remote_zip.open_remote(ref.url, timeout)
        with fh, zipfile.ZipFile(fh) as zf:
            for path in paths:
                info = zf.getinfo(path)
                if len(out) >= MAX_OBJECTS or not budget.take(info.file_size):
                    skipped.append(f"{path} ({info.file_size >> 20} MiB)")
                    continue
                got = elf.parse_bytes(zf.read(info))
                if isinstance(got, elf.ElfInfo):
                    out.append((path, got))
    except remote_zip.Unreadable as exc:
        return WheelElves(tuple(out), str(exc))
    except (zipfile.BadZipFile, KeyError, OSError, EOFError, ValueError) as exc:
        return WheelElves(tuple(out), f"not a readable zip: {exc}")
    if skipped:
        more = f" and {len(skipped) - 1} more" if len(skipped) > 1 else ""
        why = (
            f"{skipped[0]}{more} past the read budget ({PER_OBJECT >> 20} MiB a file, {BUDGET >> 20} MiB "
            f"a lock, {MAX_OBJECTS} files a wheel)"
        )
        return WheelElves(tuple(out), why)
    if ref.sha256:
        _store(ref.sha256, tuple(out))
    return WheelElves(tuple(out))


def read(
    refs: list[metadata.FileRef], files: dict[str, tuple[str, ...]], timeout: float = 60.0
) -> dict[str, WheelElves]:
    """key -> the ELF facts of its wheel's shared objects (those in `files`), in one budget for the lock."""
    budget = Budget()
    out: dict[str, WheelElves] = {}
    for ref in refs:  # in turn: the budget is spent in a known order, the same on every run
        if files.get(ref.key):
            out[ref.key] = read_one(ref, files[ref.key], budget, timeout)
    return out

"""Can this host driver run that CUDA release? (G1, before any torch import.)

Pure: the caller reads `/proc/driver/nvidia/version` (or NVML), `CUDA_VERSION` / the environment's
cudart; this module parses those texts and judges them
against the dated table in data/drivers.toml (NVIDIA's CUDA toolkit release notes). The judgement
over them, `judge_driver`, is sparkenv/rules/g1_driver.py's: the gate, `build`
(`--driver`) and anything else that needs the decision call those.
"""

from __future__ import annotations

import functools
import re
from dataclasses import dataclass

from sparkenv.knowledge import drivers

Version = tuple[int, ...]
_PROC = re.compile(r"Kernel Module(?:\s+for\s+\S+)?\s+(\d+\.\d+(?:\.\d+)?)\b")
_ANY_DRIVER = re.compile(r"\b(\d{3}\.\d{2,3}(?:\.\d{2})?)\b")
_CUDA = re.compile(r"^\s*v?(\d{1,2})\.(\d{1,2})(?:\.(\d{1,3}))?")
SUBJECT = "driver"


def version(text: str) -> Version:
    return tuple(int(p) for p in text.split("."))


def show(v: Version) -> str:
    return ".".join(str(p) for p in v)


def parse_proc_version(text: str) -> str | None:
    """The kernel module's version from /proc/driver/nvidia/version:
    'NVRM version: NVIDIA UNIX Open Kernel Module for aarch64  580.95.05  Release Build …' -> '580.95.05'."""
    first = text.strip().splitlines()[0] if text.strip() else ""
    m = _PROC.search(first) or _ANY_DRIVER.search(first)
    return m.group(1) if m else None


def module_flavour(proc_version: str | None, taint: str | None) -> str | None:
    """The NVIDIA kernel module's flavour, "open" or "proprietary", or None when neither text says.

    The open module's version line names itself ('NVIDIA UNIX Open Kernel Module for aarch64 580.95.05');
    the proprietary one's does not ('NVIDIA UNIX aarch64 Kernel Module 580.95.05'). Where the line is
    hidden, the kernel's taint flags of the module (/sys/module/nvidia/taint) tell: 'P' is set for a
    module whose license is not GPL-compatible (the proprietary module's license is "NVIDIA", the open
    one's "Dual MIT/GPL"), 'O'/'E' (out of tree, unsigned) for both."""
    first = (proc_version or "").strip().splitlines()[0] if (proc_version or "").strip() else ""
    if "Kernel Module" in first:
        return "open" if "Open Kernel Module" in first else "proprietary"
    if taint is not None and taint.strip():
        return "proprietary" if "P" in taint else "open"
    return None


def cuda_release(text: str) -> tuple[int, int, int | None] | None:
    """CUDA_VERSION '13.0.2.006' -> (13, 0, 2); '13.1' -> (13, 1, None); torch.version.cuda '13.0'."""
    m = _CUDA.match(text or "")
    if not m:
        return None
    return int(m.group(1)), int(m.group(2)), int(m.group(3)) if m.group(3) is not None else None


@functools.cache
def _table() -> dict[tuple[int, int, int], str]:
    rows = drivers().toolkit
    return {tuple(int(p) for p in k.split(".")): v for k, v in rows.items()}  # type: ignore[misc]


def reviewed() -> str:
    return drivers().reviewed


@dataclass(frozen=True)
class Requirement:
    release: str  # the CUDA release as judged ("13.0.2", "13.0 (GA; update unknown)")
    minimum: str  # the toolkit's minimum driver, as NVIDIA writes it
    floor: Version | None  # the major's minor-version-compatibility floor
    known: bool  # False: the release is newer than the table; minimum is the newest of its major
    row: str = ""  # the [toolkit] row the minimum came from ("13.4.1")


def requirement(cuda: str) -> Requirement | None:
    """The driver a CUDA release needs, per NVIDIA's table; None when `cuda` is not a CUDA version or
    its major is unknown to the table."""
    rel = cuda_release(cuda)
    if rel is None:
        return None
    major, minor, update = rel
    table = _table()
    floor_text = drivers().minor_compat.get(str(major))
    floor = version(floor_text) if floor_text else None
    same_major = sorted(k for k in table if k[0] == major)
    if not same_major:
        return None
    if update is None:  # the update is unknown: the GA is the lowest bar of that minor
        key = next((k for k in same_major if k[:2] == (major, minor)), None)
        if key is not None:
            return Requirement(f"{major}.{minor} (GA; update unknown)", table[key], floor, True, show(key))
    elif (major, minor, update) in table:
        key = (major, minor, update)
        return Requirement(f"{major}.{minor}.{update}", table[key], floor, True, show(key))
    older = [k for k in same_major if k <= (major, minor, update or 0)]
    if not older:
        return None
    shown = f"{major}.{minor}" + (f".{update}" if update is not None else "")
    return Requirement(shown, table[older[-1]], floor, False, show(older[-1]))


def newest_supported(driver: Version) -> str | None:
    """The newest CUDA release this driver runs in full (for the fix text)."""
    ok = [k for k, v in _table().items() if version(v) <= driver]
    return show(max(ok)) if ok else None

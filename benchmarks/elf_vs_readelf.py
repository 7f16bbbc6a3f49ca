"""Cross-check and time sparkenv's ELF reader against binutils' `readelf -d` on every shared object
under a folder (e.g. a real CUDA venv). Prints mismatches (there should be none) and the time ratio.

    python benchmarks/elf_vs_readelf.py /opt/torch/.venv
"""

from __future__ import annotations

import argparse
import os
import re
import subprocess
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from sparkenv.cuda import elf

_SO = re.compile(r"\.so(\.[0-9][\w.]*)?$")
_DYN = re.compile(r"\((NEEDED|SONAME)\)\s+\S+.*?\[(.*)\]")


def shared_objects(root: Path) -> list[str]:
    found = []
    for folder, _, files in os.walk(root):
        for name in files:
            path = os.path.join(folder, name)
            if _SO.search(name) and os.path.isfile(path) and not os.path.islink(path):
                found.append(path)
    return sorted(found)


def readelf(path: str) -> tuple[str | None, tuple[str, ...]] | None:
    proc = subprocess.run(["readelf", "-d", "-W", path], capture_output=True, text=True, timeout=60)
    if proc.returncode != 0 or "Not an ELF file" in proc.stderr:
        return None
    soname, needed = None, []
    for kind, value in _DYN.findall(proc.stdout):
        if kind == "SONAME":
            soname = value
        else:
            needed.append(value)
    return soname, tuple(needed)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("root", type=Path)
    args = parser.parse_args()
    paths = shared_objects(args.root)
    start = time.perf_counter()
    ours = {p: elf.read_file(p) for p in paths}
    ours_s = time.perf_counter() - start
    start = time.perf_counter()
    theirs = {p: readelf(p) for p in paths}
    theirs_s = time.perf_counter() - start
    mismatches = 0
    for p in paths:
        mine, ref = ours[p], theirs[p]
        got = (mine.soname, mine.needed) if isinstance(mine, elf.ElfInfo) else None
        if got != ref:
            mismatches += 1
            print(f"MISMATCH {p}: sparkenv={mine!r} readelf={ref!r}")
    size = sum(os.path.getsize(p) for p in paths)
    print(f"shared objects: {len(paths)} ({size / 2**30:.2f} GiB)")
    print(
        f"sparkenv ELF reader: {ours_s:.3f} s; readelf -d (one process per file): {theirs_s:.3f} s; "
        f"ratio {ours_s / theirs_s:.4f}"
    )
    print(f"mismatches: {mismatches}")
    return 1 if mismatches else 0


if __name__ == "__main__":
    sys.exit(main())

"""Cross-check and time sparkenv's fatbin reader against NVIDIA's cuobjdump on every shared object under a
folder that carries CUDA kernels (e.g. a real torch venv). Prints mismatches (there should be none).

    python benchmarks/fatbin_vs_cuobjdump.py /opt/torch/.venv --cuobjdump /path/to/cuobjdump

cuobjdump (CUDA 13) prints family ("f") cubins without their suffix, so those are compared without it.
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

from sparkenv.cuda import fatbin

_SO = re.compile(r"\.so(\.[0-9][\w.]*)?$")
_NAME = re.compile(r"\.sm_(\d+[a-z]?)\.(cubin|ptx)")


def listed(cuobjdump: str, path: str) -> set[str] | str:
    out: set[str] = set()
    for flag, kind in (("--list-elf", "sm"), ("--list-ptx", "compute")):
        proc = subprocess.run([cuobjdump, flag, path], capture_output=True, text=True, timeout=300)
        if proc.returncode != 0 and "does not contain" not in proc.stderr:
            return proc.stderr.strip().splitlines()[-1] if proc.stderr.strip() else f"exit {proc.returncode}"
        out |= {f"{kind}_{m}" for m, _ in _NAME.findall(proc.stdout)}
    return out


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("root", type=Path)
    parser.add_argument("--cuobjdump", default="cuobjdump")
    args = parser.parse_args()
    paths = sorted(
        os.path.join(d, n)
        for d, _, files in os.walk(args.root)
        for n in files
        if _SO.search(n) and not os.path.islink(os.path.join(d, n))
    )
    start = time.perf_counter()
    ours = {p: fatbin.read_targets(p) for p in paths}
    ours_s = time.perf_counter() - start
    with_kernels = [p for p, t in ours.items() if isinstance(t, list) and t]
    start = time.perf_counter()
    theirs = {p: listed(args.cuobjdump, p) for p in with_kernels}
    theirs_s = time.perf_counter() - start
    mismatches = 0
    for p in with_kernels:
        mine = {t.name.removesuffix("f") if t.variant == "f" else t.name for t in ours[p]}  # type: ignore[union-attr]
        if mine != theirs[p]:
            mismatches += 1
            print(f"MISMATCH {p}: sparkenv={sorted(mine)} cuobjdump={theirs[p]}")
    errors = [p for p, t in ours.items() if isinstance(t, str)]
    targets = sorted({t.name for p in with_kernels for t in ours[p]})  # type: ignore[union-attr]
    print(f"shared objects: {len(paths)}, with kernels: {len(with_kernels)}, unreadable: {len(errors)}")
    print(f"targets seen: {', '.join(targets)}")
    print(
        f"sparkenv fatbin reader (all {len(paths)} files): {ours_s:.3f} s; cuobjdump --list-elf/--list-ptx "
        f"(the {len(with_kernels)} with kernels): {theirs_s:.3f} s"
    )
    print(f"mismatches: {mismatches}")
    return 1 if mismatches else 0


if __name__ == "__main__":
    sys.exit(main())

"""The fatbin reader's deep read of a cuFFT-sized object, per sparkenv tree, side by side: CPU of one
`fatbin.scan(path, deep=True, mapped=True)` (what an audit worker does) in a fresh interpreter per tree,
interleaved rounds, medians and the ratio to the first tree.

    python benchmarks/fatbin_walk.py --tree with=A --tree without=B [--runs 9]

The object is built here (gcc, objcopy) as NVIDIA lays out libcufft.so.12 12.0.0.61: 24,000 fatbins of
two cubins each in .ldata, off the 8-byte grid with junk between them, and a .nv_fatbin without code for
the GB10 (so an audit reads the data sections). Both trees must find the same headers, entries and targets.
"""

from __future__ import annotations

import argparse
import random
import statistics
import struct
import subprocess
import sys
import tempfile
from pathlib import Path

MAGIC = 0xBA55ED50
ENTRY = struct.Struct("<HHIQIIHHIIIQ")  # kind, ?, header size, payload size, …, arch, …, flags
SCAN = """
import sys, time
from sparkenv.cuda import fatbin
path = sys.argv[1]
s = fatbin.scan(path, deep=True, mapped=True)
t = time.process_time()
for _ in range(3):
    fatbin.scan(path, deep=True, mapped=True)
print((time.process_time() - t) / 3, s.headers, s.entries, ",".join(sorted(x.name for x in s.targets)))
"""


def _fatbin(arch: int, entries: int = 2, payload: int = 1500) -> bytes:
    body = b""
    for _ in range(entries):
        head = ENTRY.pack(2, 0x101, 64, payload, 0, 0, 0, 0, arch, 0, 0, 0)
        body += head + bytes(64 - ENTRY.size) + bytes(payload)
    return struct.pack("<IHHQ", MAGIC, 1, 16, len(body)) + body


def build(work: Path, count: int) -> Path:
    rng = random.Random(1)
    parts = []
    for _ in range(count):
        parts += [bytes(rng.randrange(1, 40)), _fatbin(rng.choice([70, 75, 80, 86, 89, 90, 100, 120]))]
    (work / "ldata.bin").write_bytes(b"".join(parts))
    (work / "nv.bin").write_bytes(_fatbin(75, 1, 500))
    (work / "x.c").write_text("int f(void) { return 1; }\n")
    subprocess.run(["gcc", "-shared", "-fPIC", "-o", str(work / "plain.so"), str(work / "x.c")], check=True)
    out = work / "libcufftlike.so.12"
    subprocess.run(
        ["objcopy", "--add-section", f".nv_fatbin={work / 'nv.bin'}", "--add-section",
         f".ldata={work / 'ldata.bin'}", "--set-section-flags", ".ldata=alloc,load,readonly,data",
         str(work / "plain.so"), str(out)],
        check=True, capture_output=True,
    )  # fmt: skip
    return out


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--tree", action="append", required=True, metavar="NAME=DIR")
    ap.add_argument("--runs", type=int, default=9)
    ap.add_argument("--fatbins", type=int, default=24_000)
    args = ap.parse_args()
    trees = dict(t.split("=", 1) for t in args.tree)
    path = build(Path(tempfile.mkdtemp(prefix="fatbin-walk-")), args.fatbins)
    cpu: dict[str, list[float]] = {n: [] for n in trees}
    found: dict[str, str] = {}
    for round_no in range(args.runs):
        names = list(trees)
        shift = round_no % len(names)
        for name in names[shift:] + names[:shift]:
            out = subprocess.run(
                [sys.executable, "-c", SCAN, str(path)],
                capture_output=True, text=True, check=True, env={"PYTHONPATH": trees[name]},
            ).stdout.split()  # fmt: skip
            cpu[name].append(float(out[0]))
            found[name] = " ".join(out[1:])
    print(f"{path.name}: {path.stat().st_size / 1e6:.0f} MB; same headers, entries, targets: "
          f"{'yes' if len(set(found.values())) == 1 else 'NO'} ({next(iter(found.values()))})")  # fmt: skip
    first = statistics.median(cpu[next(iter(trees))])
    for name, xs in cpu.items():
        med = statistics.median(xs)
        print(f"  {name:<10} CPU per deep mapped scan, median {med:.4f} s ({first and med / first:.3f} x)")
    return 0


if __name__ == "__main__":
    sys.exit(main())

"""Where a first audit's kernel reading goes, per shared object of one site-packages folder: the ELF
reader's time, the `.nv_fatbin` scan's and (where that holds no machine code for --gpu) the data
sections' scan, with the pread calls and bytes each made. Figures, not targets (side_by_side.py judges
the audit's); the slowest objects first, a summary line on top.

  python benchmarks/kernel_reads.py /opt/torch/.venv/lib/python3.12/site-packages --gpu 12.1 --top 20

Standard library and sparkenv (PYTHONPATH works).
"""

from __future__ import annotations

import argparse
import json
import os
import time
from pathlib import Path

from sparkenv.cuda import coverage, elf, fatbin
from sparkenv.environment.distributions import Distribution, iter_distributions

_calls = [0, 0]
_pread = os.pread


def _counting(fd: int, n: int, offset: int) -> bytes:
    _calls[0] += 1
    _calls[1] += n
    return _pread(fd, n, offset)


def _timed(fn, *args):  # type: ignore[no-untyped-def]
    _calls[:] = [0, 0]
    start = time.perf_counter()
    result = fn(*args)
    return result, time.perf_counter() - start, _calls[0], _calls[1]


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("site", help="a site-packages folder")
    parser.add_argument("--gpu", default="12.1", help="capability the deep read is decided for")
    parser.add_argument("--top", type=int, default=20)
    args = parser.parse_args()
    cap = coverage.parse_gpu_option(args.gpu) or (12, 1)
    os.pread = _counting  # every reader goes through os.pread: count its calls and bytes
    rows = []
    for dist in iter_distributions(Path(args.site)):
        if not isinstance(dist, Distribution):
            continue
        for rel in dist.shared_object_paths():
            path = os.path.join(args.site, rel)
            if not os.path.isfile(path):
                continue
            _, elf_s, _, _ = _timed(elf.read_file, path)
            scan, shallow_s, calls, read = _timed(fatbin.scan, path, False)
            row = {"path": rel, "size": os.path.getsize(path), "elf_s": elf_s, "shallow_s": shallow_s}
            row.update(calls=calls, bytes=read, headers=scan.headers, entries=scan.entries)
            if scan.has_nv_fatbin and not coverage.native([t.name for t in scan.targets], cap):
                deep, deep_s, calls, read = _timed(fatbin.scan, path, True)
                row.update(deep_s=deep_s, deep_calls=calls, deep_bytes=read, deep_sections=deep.sections)
            rows.append(row)
    rows.sort(key=lambda r: -(r["elf_s"] + r["shallow_s"] + r.get("deep_s", 0)))
    total = {k: round(sum(r.get(k, 0) for r in rows), 4) for k in ("elf_s", "shallow_s", "deep_s")}
    print(json.dumps({"objects": len(rows), **total}))
    for r in rows[: args.top]:
        print(json.dumps(r))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

"""Census of the CUDA kernels every distribution of an environment carries, and what G7 makes of them.

    python benchmarks/kernel_census.py /opt/torch/.venv --gpu 9.0 --gpu 12.1 [--json census.json]

For every shared object a distribution installed: the fatbin headers in `.nv_fatbin` and in every other
allocated section (not only the data sections sparkenv reads), the targets per kind, and the coverage
verdict for each --gpu, from `.nv_fatbin` alone and with the data sections. Prints one line per
distribution with kernels and the time each reading mode took; lists any object whose fatbins sit in a
section sparkenv does not read (there should be none).
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
from collections import Counter
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from sparkenv.cuda import coverage, elf, fatbin
from sparkenv.environment.distributions import Distribution, iter_distributions
from sparkenv.environment.target import resolve


def every_section(path: str) -> dict[str, int]:
    """Fatbin headers per allocated section, all sections (the reference for what sparkenv reads)."""
    fd = os.open(path, os.O_RDONLY)
    try:

        def read(offset: int, size: int) -> bytes:
            return os.pread(fd, size, offset)

        sections = elf.list_sections(read)
        if isinstance(sections, str):
            return {}
        out: dict[str, int] = {}
        limits = fatbin.Limits(10**7, 10**8, 600.0)
        for s in sections:
            if s.type == elf.SHT_NOBITS or not s.size or s.name.startswith(".debug"):
                continue
            scan = fatbin.KernelScan()
            align = 8 if s.name == ".nv_fatbin" else 1
            fatbin._entries(fatbin._Window(read), s.offset, s.size, scan, fatbin._Budget(limits), align)
            if scan.headers:
                out[s.name] = scan.headers
        return out
    finally:
        os.close(fd)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("target")
    parser.add_argument("--gpu", action="append", default=[])
    parser.add_argument("--json")
    parser.add_argument("--all-sections", action="store_true", help="also scan every section (slow)")
    args = parser.parse_args()
    caps = [coverage.parse_capability(g) for g in args.gpu or ["12.1"]]
    tgt = resolve(args.target, None)
    rows = []
    t_shallow = t_deep = t_all = 0.0
    n_objects = 0
    for site in tgt.site_dirs:
        for dist in iter_distributions(site):
            if not isinstance(dist, Distribution):
                continue
            objs = []
            for rel in dist.shared_object_paths():
                path = os.path.join(site, rel)
                if not os.path.isfile(path):
                    continue
                n_objects += 1
                t0 = time.perf_counter()
                shallow = fatbin.scan(path, deep=False)
                t1 = time.perf_counter()
                deep = fatbin.scan(path, deep=True) if shallow.has_nv_fatbin else shallow
                t2 = time.perf_counter()
                t_shallow += t1 - t0
                t_deep += t2 - t1
                if not (shallow.targets or deep.targets or shallow.has_nv_fatbin):
                    if args.all_sections:
                        t3 = time.perf_counter()
                        hidden = every_section(path)
                        t_all += time.perf_counter() - t3
                        if hidden:
                            objs.append({"path": rel, "hidden": hidden})
                    continue
                entry = {
                    "path": rel,
                    "size": os.path.getsize(path),
                    "nv_fatbin": sorted(t.name for t in shallow.targets),
                    "deep": sorted(t.name for t in deep.targets),
                    "deep_sections": deep.sections,
                    "headers": deep.headers,
                    "entries": deep.entries,
                    "kinds": dict(Counter(t.kind for t in deep.targets)),
                    "payload": {t.name: n for t, n in sorted(deep.payload.items())},
                    "fatbin_bytes": deep.fatbin_bytes,
                    "complete": deep.complete,
                    "problem": deep.problem,
                    "shallow_s": round(t1 - t0, 4),
                    "deep_s": round(t2 - t1, 4),
                }
                if args.all_sections:
                    t3 = time.perf_counter()
                    entry["all_sections"] = every_section(path)
                    t_all += time.perf_counter() - t3
                for cap in caps:
                    label = coverage.cap_text(cap)
                    entry[f"shallow_{label}"] = coverage.judge(
                        shallow.targets, cap, shallow.complete
                    ).status.value
                    entry[f"deep_{label}"] = coverage.judge(deep.targets, cap, deep.complete).status.value
                objs.append(entry)
            if objs:
                rows.append({"dist": dist.key, "version": dist.version, "objects": objs})
    print(f"{n_objects} shared objects; .nv_fatbin {t_shallow:.3f} s; data sections {t_deep:.3f} s", end="")
    print(f"; every section {t_all:.3f} s" if args.all_sections else "")
    for row in rows:
        with_k = [o for o in row["objects"] if "deep" in o]
        verdicts = []
        for cap in caps:
            label = coverage.cap_text(cap)
            d = Counter(o[f"deep_{label}"] for o in with_k)
            s = Counter(o[f"shallow_{label}"] for o in with_k)
            verdicts.append(f"{label}: {dict(d)} (.nv_fatbin only: {dict(s)})")
        targets = sorted({t for o in with_k for t in o["deep"]})
        print(
            f"{row['dist']} {row['version']}: {len(with_k)} objects; {', '.join(targets)[:300]}; "
            + "; ".join(verdicts)
        )
        for o in row["objects"]:
            extra = set(o.get("all_sections", o.get("hidden", {}))) - {".nv_fatbin", *fatbin_sections()}
            if extra:
                print(
                    f"  fatbins in sections not read: {o['path']}: {o.get('all_sections', o.get('hidden'))}"
                )
    if args.json:
        Path(args.json).write_text(json.dumps(rows, indent=1))
    return 0


def fatbin_sections() -> list[str]:
    from sparkenv.core import datafiles

    return datafiles.load("kernels")["sections"]["data"]


if __name__ == "__main__":
    raise SystemExit(main())

"""What the forked-worker pool costs by itself, per sparkenv tree, side by side: one probe child forked,
answered and reaped (the gate's probes and check workers), and a venv's shared objects read by the
audit's pool (its ELF reader, as a first audit's workers read them) against the same reads in one
process. Each tree runs in its own interpreter; rounds are interleaved.

    python benchmarks/pool_speed.py --tree after=. --tree before=/tmp/main --venv V --runs 15
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
from pathlib import Path

ROUND = r"""
import json, os, resource, sys, time
def cpu():  # this process and its reaped children (the workers), user + system
    used = map(resource.getrusage, (resource.RUSAGE_SELF, resource.RUSAGE_CHILDREN))
    return sum(x.ru_utime + x.ru_stime for x in used)
site, workers, forks = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
try:
    from sparkenv.core import pool
    once, reap_all = pool.once, pool.reap_all
    start_pool = lambda do, n: pool.Pool(do, n, 120.0)
except ImportError:  # a tree from before core/pool.py
    from sparkenv.audit import readahead
    from sparkenv.gate import forked
    once, reap_all = forked.Forked, forked.reap_all
    start_pool = lambda do, n: readahead.Readahead(do, n)
from sparkenv.audit.scan import read_ahead
paths = sorted(os.path.join(d, f) for d, _, fs in os.walk(site) for f in fs if f.endswith(".so"))
t = time.perf_counter()
for _ in range(forks):
    once(lambda: {"gpus": [{"name": "x"}]}).result(time.monotonic() + 30)
reap_all()
fork_s = (time.perf_counter() - t) / forks
t, c = time.perf_counter(), cpu()
p = start_pool(lambda task: read_ahead(task, None), workers)
for path in paths:
    p.submit(path)
p.close_queue()
answered = sum(p.answer(path) is not None for path in paths)
p.close()
pool_s, pool_cpu = time.perf_counter() - t, cpu() - c
t = time.perf_counter()
for path in paths:
    read_ahead(path, None)
alone_s = time.perf_counter() - t
found = {"fork": fork_s, "pool": pool_s, "pool_cpu": pool_cpu, "alone": alone_s}
print(json.dumps({**found, "n": len(paths), "answered": answered}))
"""


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--tree", action="append", required=True, metavar="NAME=DIR")
    ap.add_argument("--venv", required=True, help="a venv whose shared objects the pool reads")
    ap.add_argument("--workers", type=int, default=max(1, min((os.cpu_count() or 2) - 1, 8)))
    ap.add_argument("--forks", type=int, default=20, help="probe children per round")
    ap.add_argument("--runs", type=int, default=9)
    args = ap.parse_args()
    site = str(next(Path(args.venv).glob("lib/python3*/site-packages")))
    trees = dict(t.split("=", 1) for t in args.tree)
    got: dict[str, list[dict[str, float]]] = {name: [] for name in trees}
    for _ in range(args.runs):
        for name, folder in trees.items():
            env = {**os.environ, "PYTHONPATH": str(Path(folder).resolve())}
            argv = [sys.executable, "-c", ROUND, site, str(args.workers), str(args.forks)]
            out = subprocess.run(argv, env=env, capture_output=True, text=True, timeout=600, check=True)
            got[name].append(json.loads(out.stdout))
    print(f"{args.runs} rounds, {args.workers} workers, load {os.getloadavg()[0]:.1f}")
    print(
        " tree        probe fork+answer+reap   pool read, wall / CPU (answered)   same reads in one process"
    )
    for name, rounds in got.items():
        keys = ("fork", "pool", "pool_cpu", "alone")
        fork, read, read_cpu, alone = (statistics.median(r[k] for r in rounds) for k in keys)
        answered = f"{rounds[-1]['answered']}/{rounds[-1]['n']}"
        print(
            f" {name:<10}  {fork * 1e3:8.2f} ms{read:22.3f} s / {read_cpu:.3f} s ({answered}){alone:16.3f} s"
        )


if __name__ == "__main__":
    main()

"""Where one first audit's CPU time goes (empty cache folder), in-process: imports, metadata, ELF,
kernels (fatbin reading), rules, the requirement check, the cache write. CPU time (process_time), so a
loaded machine still gives usable figures; figures, not targets (side_by_side.py judges the audit).
The phases are what the audit's own process spent: with worker processes (core/pool.py) the
reading is theirs (`workers cpu`), and `wall` marks when each step ended (seconds from the start,
imports included), `waited` how long the audit's process waited for the workers' answers.

  PYTHONPATH=<checkout> python benchmarks/audit_phases.py /opt/torch/.venv --repeat 3 [--workers N]

Standard library and sparkenv. Each repeat runs in a fresh process (imports counted every time).
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys

_CHILD = r"""
import collections, functools, os, sys, tempfile, time
os.environ["SPARKENV_CACHE_DIR"] = tempfile.mkdtemp()
w0, t0 = time.perf_counter(), time.process_time()
from sparkenv import rules
from sparkenv.audit import run, scan
from sparkenv.environment import kernels
from sparkenv.rules import requirements
imports = time.process_time() - t0
spent = collections.defaultdict(float)
marks = [("imports", time.perf_counter() - w0)]
try:
    from sparkenv.core.pool import Pool
except ImportError:  # a checkout from before the one pool
    try:
        from sparkenv.audit.readahead import Readahead as Pool
    except ImportError:  # a checkout from before the workers
        Pool = None
if Pool is not None:
    answer, close_queue = Pool.answer, Pool.close_queue

    def waiting(self, path):
        start = time.perf_counter()
        try:
            return answer(self, path)
        finally:
            spent["waited (wall)"] += time.perf_counter() - start

    def closing(self):
        marks.append((f"metadata ({self.workers} workers)", time.perf_counter() - w0))
        close_queue(self)

    Pool.answer, Pool.close_queue = waiting, closing

def timed(module, name, label):
    fn = getattr(module, name)

    @functools.wraps(fn)
    def wrapper(*args, **kwargs):
        start = time.process_time()
        try:
            return fn(*args, **kwargs)
        finally:
            spent[label] += time.process_time() - start

    setattr(module, name, wrapper)

for module, name, label in [
    (scan, "gather", "gather (all reading)"), (scan, "_distribution", "  metadata"),
    (scan, "_elf", "  ELF"), (kernels, "read_object", "  kernels"), (rules, "run_rule", "rules"),
    (requirements, "find", "  requirement check"), (run, "_remember", "cache write"),
    (requirements, "check", "  requirement check, while reading"),
]:
    if hasattr(module, name):
        timed(module, name, label)
gpu = None if sys.argv[2] == "none" else "default"
gather = scan.gather

def gathered(*args, **kwargs):
    try:
        return gather(*args, **kwargs)
    finally:
        marks.append(("read", time.perf_counter() - w0))

scan.gather = gathered
report = run.audit(sys.argv[1], gpu=gpu)
total = time.process_time() - t0
marks.append(("done", time.perf_counter() - w0))
print(f"imports (before the audit) {imports:.3f}")
for label, seconds in spent.items():
    print(f"{label} {seconds:.3f}")
print(f"total {total:.3f} ({len(report.findings)} findings)")
times = os.times()
print(f"workers cpu {times.children_user + times.children_system:.3f}")
print("wall " + ", ".join(f"{label} {at:.3f}" for label, at in marks))
"""


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("target", help="the environment to audit (a venv or its python)")
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--gpu", default="default", choices=["default", "none"])
    parser.add_argument("--workers", help="SPARKENV_AUDIT_WORKERS for the audit (default: its own choice)")
    args = parser.parse_args()
    env = dict(os.environ)
    if args.workers is not None:
        env["SPARKENV_AUDIT_WORKERS"] = args.workers
    for _ in range(args.repeat):
        out = subprocess.run(
            [sys.executable, "-c", _CHILD, args.target, args.gpu],
            capture_output=True,
            text=True,
            timeout=600,
            env=env,
        )
        if out.returncode != 0:
            print(out.stderr, file=sys.stderr)
            return 1
        print(" | ".join(out.stdout.splitlines()))
    return 0


if __name__ == "__main__":
    sys.exit(main())

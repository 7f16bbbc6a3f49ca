"""How long `sparkenv lock` takes to start uv, this checkout against another (--before), side by side:
from the process's start to its call of `children.spawn` for `uv pip compile`, and the process's CPU by
then. Each run is stopped there (a spy in front of children.spawn kills the process before uv starts), so
a run costs a fraction of a second and the rounds can be many; the index is never asked.

    python benchmarks/lock_spawn.py [--runs 15] [--input FILE] --before DIR

Cases, interleaved, each first in turn: a warm re-lock (a lock and, after, its spawn cache entry from an
earlier full lock: lock/spawn_cache.py), a miss with the earlier lock present (a fresh
SPARKENV_CACHE_DIR), the first lock (no earlier lock, fresh cache). Run it from any folder.
"""

from __future__ import annotations

import argparse
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
AS_OF = "2026-11-30T00:00:00Z"
SPY = (
    "import sys, time\n"
    "import sparkenv.core.children as c\n"
    "spawn, out = c.spawn, sys.argv.pop(1)\n"
    "def spy(*a, **k):\n"
    "    if a[0][1:3] == ['pip', 'compile']:\n"
    "        open(out, 'w').write(f'{time.time()} {time.process_time()}')\n"
    "        import os; os.kill(os.getpid(), 9)\n"
    "    return spawn(*a, **k)\n"
    "c.spawn = spy\n"
    "sys.argv[0] = 'sparkenv'\n"
    "from sparkenv.cli.entry import main; main()\n"
)
CASES = ("warm re-lock", "miss, lock present", "first")


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--runs", type=int, default=15)
    ap.add_argument("--input", default=str(ROOT / "lockfiles" / "inputs" / "playbook-unsloth.txt"))
    ap.add_argument("--before", metavar="DIR", required=True, help="a checkout whose sparkenv runs beside")
    args = ap.parse_args()
    work = Path(tempfile.mkdtemp(prefix="lockspawn-"))
    neutral = work / "cwd"  # python -m puts the working folder first on sys.path
    neutral.mkdir()
    base = {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}
    base["UV_CACHE_DIR"] = str(work / "uv")
    trees = {"after": {}, "before": {"PYTHONPATH": str(Path(args.before).resolve())}}
    lock_args = ["lock", str(Path(args.input).resolve()), "-q", "--exclude-newer", AS_OF]

    def lock(tree: str, out: Path, cache: Path, stop: bool = True) -> tuple[float, float]:
        env = {**base, **trees[tree], "SPARKENV_CACHE_DIR": str(cache)}
        argv = [*lock_args, "--output-dir", str(out)]
        if not stop:  # a whole lock: the earlier lock (and entry) the warm case re-locks
            subprocess.run(
                [sys.executable, "-m", "sparkenv", *argv], env=env, cwd=neutral, capture_output=True
            )
            return 0.0, 0.0
        mark = work / "mark"
        mark.unlink(missing_ok=True)
        start = time.time()
        subprocess.run(
            [sys.executable, "-c", SPY, str(mark), *argv], env=env, cwd=neutral, capture_output=True
        )
        wall, cpu = map(float, mark.read_text().split())
        return wall - start, cpu

    for tree in trees:
        lock(tree, work / f"out-{tree}", work / f"sp-{tree}", stop=False)
    got: dict[tuple[str, str], list[tuple[float, float]]] = {}
    order = [(case, tree) for case in CASES for tree in trees]
    for n in range(args.runs):
        for case, tree in order[n % len(order) :] + order[: n % len(order)]:
            fresh = Path(tempfile.mkdtemp(dir=work))
            if case == CASES[0]:
                took = lock(tree, work / f"out-{tree}", work / f"sp-{tree}")
            elif case == CASES[1]:
                took = lock(tree, work / f"out-{tree}", fresh)
            else:
                took = lock(tree, work / f"none-{tree}", fresh)
            got.setdefault((case, tree), []).append(took)
    print(f"{args.input}: {args.runs} interleaved runs, load {os.getloadavg()[0]:.1f}")
    for case in CASES:
        for tree in trees:
            walls = [w for w, _ in got[(case, tree)]]
            cpu = statistics.median(c for _, c in got[(case, tree)])
            print(
                f"  {case:20} {tree:6} to uv's spawn median {statistics.median(walls):.3f} s "
                f"[{min(walls):.3f}, {max(walls):.3f}]  process CPU {cpu:.3f} s"
            )
    shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()

"""What `sparkenv gate --watch` costs a GPU workload: the same bf16 matrix-product loop
(benchmarks/matmul_load.py) run unwatched and under `gate --watch`, alternated (A B B A …) so drift in
clocks and temperature falls on both, in one run. Prints each run's TFLOP/s and the ratio watched /
unwatched (target ≥ 0.99), and the watcher's own CPU share from its summary (target ≤ 0.5 % of one core).

Needs an NVIDIA GPU, torch, and sparkenv importable by the same Python.

    python benchmarks/watch_overhead.py --seconds 30 --reps 2
    python benchmarks/watch_overhead.py --cotenant-at 20 --seconds 60 --reps 0 --keep DIR   # G6 demo
"""

from __future__ import annotations

import argparse
import json
import os
import re
import statistics
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
LOAD = os.path.join(HERE, "matmul_load.py")


def load(seconds: float, size: int) -> list[str]:
    return [sys.executable, LOAD, "--seconds", str(seconds), "--size", str(size)]


def once(watched: bool, a: argparse.Namespace, folder: str) -> tuple[float, str]:
    cmd = load(a.seconds, a.size)
    if watched:
        cmd = [sys.executable, "-m", "sparkenv", "gate", "-q", "--watch", "--watch-dir", folder,
               "--watch-interval", str(a.interval), "--", *cmd]  # fmt: skip
    proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    cotenant = None
    if a.cotenant_at:
        time.sleep(a.cotenant_at)
        # not the workload's child: its own session, as another user's job would be
        cotenant = subprocess.Popen(
            [*load(a.cotenant_seconds, 4096), "--warmup", "1", "--hold-gib", str(a.cotenant_gib)],
            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, start_new_session=True,
        )  # fmt: skip
    out, err = proc.communicate(timeout=a.seconds + 300)
    if cotenant:
        cotenant.wait(timeout=120)
    if proc.returncode != 0:
        sys.exit(f"load failed ({proc.returncode}): {err[-2000:]}")
    time.sleep(0.5)  # the watcher's summary follows the workload's end
    tflops = json.loads(out.strip().splitlines()[-1])["tflops"]
    return tflops, err


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--seconds", type=float, default=30.0)
    ap.add_argument("--reps", type=int, default=2, help="pairs of runs, alternated A B B A")
    ap.add_argument("--size", type=int, default=8192)
    ap.add_argument("--interval", type=float, default=2.0)
    ap.add_argument("--cotenant-at", type=float, default=0.0, help="one watched run with a co-tenant")
    ap.add_argument("--cotenant-seconds", type=float, default=20.0)
    ap.add_argument("--cotenant-gib", type=float, default=8.0)
    ap.add_argument("--keep", help="the watch folder (default: a temporary one)")
    a = ap.parse_args()
    folder = a.keep or tempfile.mkdtemp(prefix="sparkenv-watch-bench-")
    if a.cotenant_at:
        tflops, err = once(True, a, folder)
        print(f"watched run with a co-tenant at {a.cotenant_at:g} s: {tflops:.1f} TFLOP/s")
        print(err)
        return
    a.cotenant_at = 0
    runs: dict[bool, list[float]] = {False: [], True: []}
    shares = []
    order = [False, True, True, False] * a.reps
    for watched in order:
        tflops, err = once(watched, a, folder)
        runs[watched].append(tflops)
        m = re.search(r"watcher CPU ([\d.]+) s \(([\d.]+)% of one core", err)
        if watched and m:
            shares.append(float(m.group(2)))
        print(f"{'watched  ' if watched else 'unwatched'} {tflops:8.1f} TFLOP/s", flush=True)
    plain, watched = statistics.mean(runs[False]), statistics.mean(runs[True])
    print(f"unwatched mean {plain:.1f} TFLOP/s, watched mean {watched:.1f} TFLOP/s")
    print(f"ratio watched/unwatched: {watched / plain:.4f} (target >= 0.99)")
    if shares:
        print(f"watcher CPU: {statistics.mean(shares):.2f} % of one core (target <= 0.5 %)")
    print(json.dumps({"unwatched": runs[False], "watched": runs[True], "ratio": watched / plain,
                      "watcher_cpu_percent": shares}))  # fmt: skip


if __name__ == "__main__":
    main()

"""What the gate costs at container start, side by side in one run: the bare workload, the gate alone
(default and --deep), the gate in front of the workload (as an entrypoint: exec), the interpreter's own
start, and the reference preflight script when present. Interleaved rounds in a rotating order after a
warm-up round; medians; ratios against the workload alone.

  python benchmarks/gate_start.py --python /opt/torch/.venv/bin/python --runs 7
  python benchmarks/gate_start.py --no-torch            # a machine without GPU/torch: the gate alone
  python benchmarks/gate_start.py --preflight plugins/dgx-spark-ops/assets/preflight.sh --json

Each run gets an empty sparkenv cache folder ($SPARKENV_CACHE_DIR), as a container started from an
image has, except the row "gate (default, warm cache)", whose folder is kept from run to run (a
restarted container, a cache volume, an image that holds the cache).

Targets (issue 13, tightened by issue 23): on the H200 machine the default gate in front of the workload
≤ 1.05 × the workload alone, the default gate alone ≤ 0.3 s, --deep ≤ 1.15 × a bare torch start;
without a GPU ≤ 0.3 s on the 2-core test machine. Standard library only; sparkenv must be importable by
--python (PYTHONPATH works).
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import shutil
import statistics
import subprocess
import sys
import tempfile
import time

WORKLOAD = "import torch; torch.zeros(1, device='cuda'); torch.cuda.synchronize()"
# A container started from an image has an empty sparkenv cache folder (unless a volume or the image
# holds one): every run gets a fresh one, but the row named "warm cache", which keeps its folder.
WARM = "warm cache"


def commands(args: argparse.Namespace) -> dict[str, list[str]]:
    py = args.python
    gate = [py, "-m", "sparkenv", "gate", "-q", "--deadline", str(args.deadline)]
    out: dict[str, list[str]] = {"python -I -c pass": [py, "-I", "-c", "pass"]}
    if not args.no_torch:
        out["workload alone"] = [py, "-c", args.workload]
    out["gate (default)"] = gate
    out["gate (default, warm cache)"] = gate
    if not args.no_torch:
        out["gate --deep"] = [*gate, "--deep"]
        if args.deep_cache:  # filled by the warm-up round: every timed run is a hit
            out["gate --deep (cached)"] = [*gate, "--deep", "--deep-cache", args.deep_cache]
        out["gate -- workload (exec)"] = [*gate, "--", py, "-c", args.workload]
    if args.preflight and os.path.exists(args.preflight):
        out["reference preflight.sh"] = ["bash", args.preflight]
    return out


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--python", default=sys.executable, help="interpreter of the workload and the gate")
    parser.add_argument("--runs", type=int, default=7, help="timed rounds (≥ 5)")
    parser.add_argument("--warmup", type=int, default=1)
    parser.add_argument("--workload", default=WORKLOAD, help="python -c code of the workload")
    parser.add_argument("--no-torch", action="store_true", help="no GPU/torch here: time the gate alone")
    parser.add_argument("--preflight", help="path of the reference preflight.sh, timed when present")
    parser.add_argument("--deadline", type=float, default=25.0)
    parser.add_argument("--deep-cache", metavar="DIR", help="also time `gate --deep --deep-cache DIR`")
    parser.add_argument("--json", action="store_true", help="print the figures as JSON too")
    args = parser.parse_args()
    if args.runs < 5:
        parser.error("--runs must be at least 5 (medians of fewer runs mislead)")
    cmds = commands(args)
    names = list(cmds)
    times: dict[str, list[float]] = {n: [] for n in names}
    # CPU time (user + system) of each child too: on a shared machine under load, wall time mostly
    # measures the other jobs; CPU time is what the command itself costs.
    cpu: dict[str, list[float]] = {n: [] for n in names}
    codes: dict[str, set[int]] = {n: set() for n in names}
    warm_cache = tempfile.mkdtemp(prefix="gate-start-warm-")
    for round_no in range(args.warmup + args.runs):
        shift = round_no % len(names)
        for name in names[shift:] + names[:shift]:  # rotated: drift in load hits all alike
            cache = warm_cache if WARM in name else tempfile.mkdtemp(prefix="gate-start-cold-")
            env = {**os.environ, "SPARKENV_CACHE_DIR": cache}
            before = resource.getrusage(resource.RUSAGE_CHILDREN)
            start = time.perf_counter()
            proc = subprocess.run(cmds[name], capture_output=True, timeout=600, env=env)
            took = time.perf_counter() - start
            after = resource.getrusage(resource.RUSAGE_CHILDREN)
            if cache != warm_cache:
                shutil.rmtree(cache, ignore_errors=True)
            if round_no >= args.warmup:
                times[name].append(took)
                cpu[name].append(after.ru_utime - before.ru_utime + after.ru_stime - before.ru_stime)
                codes[name].add(proc.returncode)
            if proc.returncode not in (0, 1):
                tail = proc.stderr.decode(errors="replace").strip().splitlines()[-1:]
                print(f"warning: {name} exited {proc.returncode}: {tail}", file=sys.stderr)
    shutil.rmtree(warm_cache, ignore_errors=True)
    med = {n: statistics.median(t) for n, t in times.items()}
    cpu_med = {n: statistics.median(t) for n, t in cpu.items()}
    load = os.getloadavg()[0]
    if os.environ.get("PYTHONDONTWRITEBYTECODE"):
        # Then no .pyc is ever written: every start compiles sparkenv's modules again (~0.1 s of CPU on
        # the 2-core machine), which an installed sparkenv (pip compiles on install) never pays.
        print("note: PYTHONDONTWRITEBYTECODE is set: each start compiles its modules from source")
    head = f"{'median s':>9}  {'min s':>7}  {'CPU s':>7}  command"
    print(f"{head} ({args.runs} runs, interleaved; load {load:.1f})")
    for n in names:
        print(f"{med[n]:9.3f}  {min(times[n]):7.3f}  {cpu_med[n]:7.3f}  {n}  exit {sorted(codes[n])}")
    ratios: dict[str, float] = {}
    base = "workload alone" if "workload alone" in med else None
    if base:
        for n in names:
            if n != base and n != "python -I -c pass":
                ratios[f"{n} / workload alone"] = med[n] / med[base]
    for k, v in ratios.items():
        print(f"ratio {k} = {v:.3f}")
    targets = {"gate (default) ≤ 0.3 s": med["gate (default)"] <= 0.3}
    if base:
        targets["gate -- workload ≤ 1.05 × workload"] = (
            ratios["gate -- workload (exec) / workload alone"] <= 1.05
        )
        # where the exec row's extra time goes: the gate's own start and work (the default gate alone
        # less the interpreter's bare start), against what exec adds beyond the workload alone
        floor = med["python -I -c pass"]
        print(
            f"breakdown: exec − workload alone {med['gate -- workload (exec)'] - med[base]:+.3f} s; "
            f"gate alone − python -I {med['gate (default)'] - floor:.3f} s "
            f"(CPU {cpu_med['gate (default)'] - cpu_med['python -I -c pass']:.3f} s); "
            f"workload alone ranged {min(times[base]):.3f}–{max(times[base]):.3f} s"
        )
        targets["gate --deep ≤ 1.15 × workload"] = ratios["gate --deep / workload alone"] <= 1.15
    for k, ok in targets.items():
        print(f"target {k}: {'met' if ok else 'MISSED'}")
    if args.json:
        figures = {
            "medians_s": med,
            "cpu_medians_s": cpu_med,
            "load_average_1m": load,
            "bytecode_cache": not os.environ.get("PYTHONDONTWRITEBYTECODE"),
            "runs_s": times,
        }
        print(json.dumps({**figures, "ratios": ratios, "targets": targets}, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())

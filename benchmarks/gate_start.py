"""What the gate costs in front of a workload, side by side in one run, and where that time goes.

  P=/opt/torch/.venv/bin/python
  $P benchmarks/gate_start.py --python $P --tree after=<checkout> --tree before=<other checkout> \
      --runs 36 --torch-runs 6 --breakdown --json
  python benchmarks/gate_start.py --no-torch --runs 21      # a machine without GPU/torch

Rows, interleaved in rounds of rotating order after one warm-up round, each run with an empty sparkenv
cache folder (a container started from an image): `python -I -c pass` (the interpreter's own start);
per sparkenv tree (`--tree NAME=DIR`; default: the sparkenv importable here) `gate -q` alone, and
`gate -q -- W` for two workloads W, each also alone. A tree's gate starts as a built image starts it
(`--launch image`, the default): through that tree's own sparkenv/image/sparkenv.sh, its `python3` being
--python and its /opt/sparkenv/lib the tree (the tree's launcher decides the interpreter's flags: `-I`
before the fifth session, `-I -S` and gate/launcher.py after); `--launch module` runs `python -m sparkenv`
with the tree on PYTHONPATH, as the fourth session's figures did. Before the rounds, each tree's gate
runs once the image's way with `--json --dump-facts`: the findings (G-number, status, subject) and the
facts read from the workload's interpreter (its distributions, torch's files, Triton's ptxas) are
compared across the trees ("same findings").

- the light workload: the CUDA driver's start through ctypes (cuInit, the primary context, a 1 MiB
  allocation, a synchronize; a bare interpreter where there is no libcuda). It takes ~0.4 s and varies
  by ~0.03 s, so the gate's added seconds (the paired difference, round by round, of `gate -- W` and W
  alone) are measured to ~0.01 s; it initialises the GPU as torch does, so any effect of the gate's
  NVML calls on the workload's CUDA start is in it.
- the torch workload of the issue (import torch, one CUDA tensor, synchronize), in `--torch-runs` of
  the rounds (spread over the run): it takes ~3 s and varies by ±0.5 s within a run, so its own ratio
  needs many more runs than a device lease allows to tell 1.05 from 1.07.

Printed: each row's median, min, interquartile range and CPU (user + system of the process tree); the
paired differences with 90 % bootstrap intervals; the ratio `gate -- torch workload / workload alone`
measured directly, and as 1 + (the gate's added seconds in front of the light workload) / (the torch
workload's median), with its interval; each target met or MISSED. `--breakdown` adds where the gate's
time goes: NVML's phases in a fresh process, and each tree's own timeline in-process (imports, the
early start, the probes, the checks, the report).

Targets (issue 23): the default gate in front of the workload ≤ 1.05 × the workload alone (H200
machine); the default gate alone ≤ 0.3 s. Standard library only; each tree's sparkenv must import with
--python (its dependencies installed there).
"""

from __future__ import annotations

import argparse
import json
import os
import random
import resource
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from typing import Any

from stats import bootstrap, iqr  # benchmarks/stats.py, beside this script

TORCH = "import torch; torch.zeros(1, device='cuda'); torch.cuda.synchronize()"
LIGHT = """import ctypes, ctypes.util
try:
    cu = ctypes.CDLL("libcuda.so.1")
except OSError:
    raise SystemExit(0)  # no driver here: the workload is the interpreter's start alone
assert cu.cuInit(0) == 0
dev, ctx, ptr = ctypes.c_int(), ctypes.c_void_p(), ctypes.c_uint64()
assert cu.cuDeviceGet(ctypes.byref(dev), 0) == 0
assert cu.cuDevicePrimaryCtxRetain(ctypes.byref(ctx), dev) == 0
assert cu.cuCtxSetCurrent(ctx) == 0
assert cu.cuMemAlloc_v2(ctypes.byref(ptr), 1 << 20) == 0
assert cu.cuCtxSynchronize() == 0
"""
BARE = "python -I -c pass"
CWD: list[str | None] = [None]  # where every timed command runs (main sets it)
LIB = "/opt/sparkenv/lib"  # where an image keeps sparkenv (sparkenv/image/sparkenv.sh)
# the facts a gate reads from the workload's interpreter: what a changed sys.path would change
INTERPRETER_FACTS = ("dists", "torch_static", "kernel_coverage")

# NVML's phases, in a fresh process: what the gate's GPU probe costs by itself.
NVML_PHASES = r"""
import json, sys, time
t0 = time.perf_counter()
import pynvml
t1 = time.perf_counter(); pynvml.nvmlInit(); t2 = time.perf_counter()
from sparkenv.environment import nvml
t3 = time.perf_counter(); nvml._read(pynvml, 0.0, None); t4 = time.perf_counter()
pynvml.nvmlShutdown(); t5 = time.perf_counter()
print(json.dumps({"import pynvml": t1 - t0, "nvmlInit": t2 - t1, "the gate's NVML reads": t4 - t3,
                  "nvmlShutdown": t5 - t4}))
"""

# The gate's own timeline, in-process, for one tree: the entrypoint as the image runs it, the exec
# replaced by an exit. Marks are seconds since this script started (the interpreter is up by then).
TIMELINE = r"""
import json, os, sys, time, tempfile
T0 = time.perf_counter()
sys.path.insert(0, os.environ["GATE_START_TREE"])  # as the image's launcher puts /opt/sparkenv/lib
if sys.flags.no_site:  # the image's launcher of this tree runs python -I -S: what it does first
    from sparkenv.gate import launcher
    getattr(launcher, "prepare", launcher.complete_path)()
marks, probes, forks = {}, {}, tempfile.mkdtemp()
def mark(name):
    marks.setdefault(name, time.perf_counter() - T0)
def done(*_):
    mark("exec")
    for f in os.listdir(forks):
        name, start, end = open(os.path.join(forks, f)).read().split()
        probes["forked: " + name] = [float(end) - float(start), None, float(start) - T0]
    print(json.dumps({"marks": marks, "probes": probes}), flush=True)
    os._exit(0)
os.execvp = done
sys.argv = ["sparkenv", "gate", "-q", "--", sys.executable, "-c", "pass"]
from sparkenv.cli import entry
mark("entry imported")
# only what the gate imports before its first fork anyway: the children must not inherit more
from sparkenv.gate import early, entry as gate_entry
def stamp(name, start):  # in a forked child: its start and end on the clock every process shares
    with open(os.path.join(forks, str(os.getpid())), "w") as out:
        out.write(f"{name} {start} {time.perf_counter()}")
real_start = gate_entry.start_early
def start_early(a):
    mark("early start"); real_start(a); mark("early started")
gate_entry.start_early = start_early
if hasattr(early, "_started"):  # children forked by the gate (core/pool.py): each times itself
    real_started = early._started
    def _started(fn):
        name = fn.__qualname__.split(".")[0] + "".join(f"/{d}" for d in fn.__defaults__ or ())
        def timed():
            s = time.perf_counter()
            try:
                return fn()
            finally:
                stamp(name.replace(" ", "_"), s)
        return real_started(timed)
    early._started = _started
if hasattr(gate_entry, "_check_group"):  # the check workers: each stamps when it is ready for the facts
    real_check = gate_entry._check_group
    def _check_group(group, receive, *more):  # (an older tree passes its alarm too)
        s = time.perf_counter()
        class Ready:  # the feed (core/pool.py), stamped when the worker asks for the facts
            waiting = getattr(receive, "waiting", None)
            def __call__(self):
                stamp("check_worker_ready/" + "+".join(group), s)
                return receive()
        return real_check(group, Ready(), *more)
    gate_entry._check_group = _check_group
def patch_later():  # what the gate imports after its forks: patched once it is there
    from sparkenv.gate import orchestrate
    real_run_all = orchestrate.run_all
    def run_all(ps, deadline, *more):
        mark("probes start")
        gate_run = sys.modules.get("sparkenv.gate.run")
        if gate_run is not None and not hasattr(gate_run, "_timed"):
            gate_run._timed = True
            real_evaluate = gate_run.evaluate
            def evaluate(*a, **k):
                mark("checks start")
                try:
                    return real_evaluate(*a, **k)
                finally:
                    mark("checks done")
            gate_run.evaluate = evaluate
        def wrap(name, fn):
            def run():
                s, c = time.perf_counter(), time.thread_time()
                try:
                    return fn()
                finally:
                    probes[name] = [time.perf_counter() - s, time.thread_time() - c, s - T0]
            return run
        try:
            return real_run_all({n: wrap(n, f) for n, f in ps.items()}, deadline, *more)
        finally:
            mark("probes done")
    orchestrate.run_all = run_all
real_group = early.start_group
def start_group(key, read):
    real_group(key, read)
    if key == early.HOST:  # the gate's last fork (gate/entry.py start_early)
        mark("forks done")
        patch_later()
early.start_group = start_group
entry.main()
"""


def rows(
    args: argparse.Namespace, light: str
) -> tuple[dict[str, tuple[dict[str, str], list[str]]], set[str]]:
    """name -> (environment, argv); and the names timed only in the torch rounds."""
    py = args.python
    out: dict[str, tuple[dict[str, str], list[str]]] = {BARE: ({}, [py, "-I", "-c", "pass"])}
    heavy: set[str] = set()
    out["light workload alone"] = ({}, [py, light])
    if not args.no_torch:
        out["torch workload alone"] = ({}, [py, "-c", args.workload])
        heavy.add("torch workload alone")
    for tree, path in args.trees:
        env, start = starter(args, tree, path)
        gate = [*start, "gate", "-q", "--deadline", str(args.deadline)]
        out[f"gate ({tree})"] = (env, gate)
        out[f"gate ({tree}) -- light"] = (env, [*gate, "--", py, light])
        if not args.no_torch:
            out[f"gate ({tree}) -- torch"] = (env, [*gate, "--", py, "-c", args.workload])
            heavy.add(f"gate ({tree}) -- torch")
            if args.deep:
                out[f"gate ({tree}) --deep"] = (env, [*gate, "--deep"])
                heavy.add(f"gate ({tree}) --deep")
    return out, heavy


def starter(args: argparse.Namespace, tree: str, path: str) -> tuple[dict[str, str], list[str]]:
    """(environment, argv before `gate`) that start a tree's sparkenv as --launch says: the tree's own
    image launcher (sparkenv.sh with --python for python3 and the tree for /opt/sparkenv/lib: every
    interpreter flag it sets, as a container's start runs it), or `python -m sparkenv`."""
    if args.launch == "module" or not path:
        return ({"PYTHONPATH": path} if path else {}), [args.python, "-m", "sparkenv"]
    return {}, [image_launcher(args.python, path, os.path.join(args.work, f"sparkenv-{tree}.sh"))]


def image_launcher(python: str, tree: str, script: str) -> str:
    """The tree's sparkenv/image/sparkenv.sh written to `script`, `python` as its python3 and the tree
    as its /opt/sparkenv/lib (benchmarks/gate_torch_after.py uses it too)."""
    with open(os.path.join(tree, "sparkenv", "image", "sparkenv.sh")) as fh:
        text = fh.read()
    if "exec python3 " not in text or LIB not in text:
        raise SystemExit(f"{tree}: its sparkenv/image/sparkenv.sh starts no `exec python3 ` with {LIB}")
    with open(script, "w") as fh:
        fh.write(text.replace("exec python3 ", f"exec {python} ").replace(LIB, tree))
    os.chmod(script, 0o755)
    return script


def timeline_flags(path: str) -> list[str]:
    """The interpreter flags the tree's image launcher gives the gate (-S where it has launcher.py)."""
    return ["-I", "-S"] if os.path.isfile(os.path.join(path, "sparkenv", "gate", "launcher.py")) else ["-I"]


def same_findings(args: argparse.Namespace) -> dict[str, Any]:
    """Each tree's gate once, started as --launch says, with --json and --dump-facts: do the findings
    and the facts of the workload's interpreter agree across the trees?"""
    seen: dict[str, tuple[Any, Any]] = {}
    for tree, path in args.trees:
        env, start = starter(args, tree, path)
        dump = os.path.join(args.work, f"facts-{tree}.json")
        cache = tempfile.mkdtemp(prefix="gate-start-")
        p = subprocess.run(
            [*start, "gate", "--json", "--dump-facts", dump],
            capture_output=True,
            text=True,
            timeout=120,
            env={**os.environ, **env, "SPARKENV_CACHE_DIR": cache},
            cwd=CWD[0],
        )
        shutil.rmtree(cache, ignore_errors=True)
        try:
            report = json.loads(p.stdout)
            with open(dump) as fh:
                facts = json.load(fh)
        except (OSError, ValueError):
            print(f"same findings: gate ({tree}) gave no report (exit {p.returncode}): {p.stderr[-300:]}")
            return {"same": False}
        found = sorted((f["id"], f["status"], f["subject"]) for f in report["findings"])
        seen[tree] = (found, {k: facts.get(k) for k in INTERPRETER_FACTS})
    first = next(iter(seen.values()), None)
    differ = {t: v for t, v in seen.items() if v != first}
    for tree, (found, facts) in differ.items():
        assert first is not None
        print(f"same findings: gate ({tree}) differs:")
        print(f"  findings only there: {sorted(set(found) - set(first[0]))}")
        print(f"  findings only in the first tree: {sorted(set(first[0]) - set(found))}")
        print(f"  interpreter facts that differ: {[k for k in facts if facts[k] != first[1][k]]}")
    if first is not None:
        dists = len(first[1]["dists"] or {})
        say = "yes" if not differ else "NO"
        print(
            f"same findings and interpreter facts across the trees: {say} ({len(first[0])} findings, "
            f"{dists} distributions)"
        )
    return {"same": not differ, "findings": {t: v[0] for t, v in seen.items()}}


def timed(env: dict[str, str], argv: list[str]) -> tuple[float, float, int, str]:
    cache = tempfile.mkdtemp(prefix="gate-start-")  # an empty cache folder, as a fresh container's
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    start = time.perf_counter()
    proc = subprocess.run(
        argv,
        capture_output=True,
        timeout=600,
        env={**os.environ, **env, "SPARKENV_CACHE_DIR": cache},
        cwd=CWD[0],
    )
    took = time.perf_counter() - start
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    shutil.rmtree(cache, ignore_errors=True)
    cpu = after.ru_utime - before.ru_utime + after.ru_stime - before.ru_stime
    return took, cpu, proc.returncode, proc.stderr.decode(errors="replace").strip()[-300:]


def paired(times: dict[str, list[float]], rounds: dict[str, list[int]], a: str, b: str) -> list[float]:
    """a − b in the rounds that timed both."""
    at = dict(zip(rounds[a], times[a], strict=True))
    bt = dict(zip(rounds[b], times[b], strict=True))
    return [at[r] - bt[r] for r in sorted(set(at) & set(bt))]


def median_of(runs: list[dict[str, Any]], path: tuple[str, ...]) -> float | None:
    got = []
    for r in runs:
        v: Any = r
        for key in path:
            v = v.get(key) if isinstance(v, dict) else None
        if isinstance(v, (int, float)):
            got.append(v)
    return statistics.median(got) if got else None


def breakdown(args: argparse.Namespace, med: dict[str, float]) -> dict[str, Any]:
    out: dict[str, Any] = {}
    tree0 = next((p for _t, p in args.trees if p), "")
    env0 = {**os.environ, **({"PYTHONPATH": tree0} if tree0 else {})}
    nv = []
    for _ in range(args.breakdown_runs):
        p = subprocess.run(
            [args.python, "-c", NVML_PHASES], capture_output=True, text=True, timeout=60, env=env0, cwd=CWD[0]
        )
        if p.returncode == 0:
            nv.append(json.loads(p.stdout.strip().splitlines()[-1]))
    if nv:
        out["nvml"] = {k: statistics.median(r[k] for r in nv) for k in nv[0]}
        print(f"NVML in a fresh process, median of {len(nv)} (s):")
        for k, v in out["nvml"].items():
            print(f"  {v:7.4f}  {k}")
    else:
        print("NVML phases: not measured (no pynvml or no driver here)")
    for tree, path in args.trees:
        if path and args.launch == "image":  # the interpreter's flags of the tree's image launcher
            argv, env = [args.python, *timeline_flags(path), "-c", TIMELINE], {**os.environ}
        else:
            argv, env = [args.python, "-c", TIMELINE], {**os.environ, "PYTHONPATH": path}
        env["GATE_START_TREE"] = path or os.getcwd()
        runs = []
        for _ in range(args.breakdown_runs):
            cache = tempfile.mkdtemp(prefix="gate-start-")
            p = subprocess.run(
                argv,
                capture_output=True,
                text=True,
                timeout=60,
                env={**env, "SPARKENV_CACHE_DIR": cache},
                cwd=CWD[0],
            )
            shutil.rmtree(cache, ignore_errors=True)
            lines = [ln for ln in p.stdout.splitlines() if ln.startswith("{")]
            if lines:
                runs.append(json.loads(lines[-1]))
        if not runs:
            print(f"timeline of gate ({tree}): not measured: {p.stderr.strip()[-300:]}")
            continue
        marks = {k: median_of(runs, ("marks", k)) for k in runs[0]["marks"]}
        bare = med[BARE]
        gate_alone = med.get(f"gate ({tree})")
        print(f"where gate ({tree}) spends its time, median of {len(runs)} in-process runs (s):")
        print(f"  {bare:7.4f}  the interpreter's start (`{BARE}`, the rows above)")
        prev = 0.0
        for k, v in sorted(marks.items(), key=lambda kv: kv[1] or 0):
            if v is None:
                continue
            print(f"  {v - prev:7.4f}  … until '{k}' (at {v:.4f})")
            prev = v
        if gate_alone is not None:
            print(
                f"  {gate_alone - bare - prev:7.4f}  the rest of `gate` alone (interpreter exit, "
                "measurement harness) from the rows"
            )
        names = sorted({n for r in runs for n in r["probes"]})
        print("  each probe: wall s (from its start), CPU s of its thread (—: a forked child), start s")
        for n in sorted(names, key=lambda n: -(median_of(runs, ("probes", n)) or 0)):
            vals = [r["probes"][n] for r in runs if n in r["probes"]]
            wall = statistics.median(v[0] for v in vals)
            cpus = [v[1] for v in vals if v[1] is not None]
            cpu = f"{statistics.median(cpus):7.4f}" if cpus else "      —"
            print(f"  {wall:7.4f}  {cpu}  {statistics.median(v[2] for v in vals):7.4f}  {n}")
        out[tree] = {"marks": marks, "probes": {n: [r["probes"].get(n) for r in runs] for n in names}}
    return out


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--python", default=sys.executable, help="interpreter of the workload and the gate")
    parser.add_argument(
        "--tree",
        action="append",
        default=[],
        metavar="NAME=DIR",
        help="a sparkenv checkout (first on PYTHONPATH); repeat: side by side",
    )
    parser.add_argument("--runs", type=int, default=31, help="timed rounds (≥ 5)")
    parser.add_argument("--torch-runs", type=int, default=7, help="rounds that also time the torch workload")
    parser.add_argument("--workload", default=TORCH, help="python -c code of the torch workload")
    parser.add_argument("--no-torch", action="store_true", help="no torch here: the light workload only")
    parser.add_argument("--deep", action="store_true", help="also time `gate --deep` in the torch rounds")
    parser.add_argument("--deadline", type=float, default=25.0)
    parser.add_argument(
        "--launch",
        choices=("image", "module"),
        default="image",
        help="start each tree's gate as a built image does (its sparkenv.sh), or as python -m sparkenv",
    )
    parser.add_argument("--breakdown", action="store_true", help="where the gate's time goes")
    parser.add_argument("--breakdown-runs", type=int, default=7)
    parser.add_argument("--json", action="store_true", help="print the figures as JSON too")
    args = parser.parse_args()
    if args.runs < 5:
        parser.error("--runs must be at least 5 (medians of fewer runs mislead)")
    args.trees = [tuple(t.split("=", 1)) for t in args.tree] or [("this", "")]
    if any(len(t) != 2 or not os.path.isdir(t[1]) for t in args.trees if t[1]):
        parser.error("--tree takes NAME=DIR, DIR a sparkenv checkout")
    args.trees = [(name, os.path.abspath(path) if path else "") for name, path in args.trees]
    work = args.work = tempfile.mkdtemp(prefix="gate-start-")
    if any(path for _name, path in args.trees):
        # `python -m` and `-c` put the current folder first on sys.path: run from one without a sparkenv
        # of its own, so that each tree's PYTHONPATH decides which sparkenv runs
        CWD[0] = tempfile.mkdtemp(prefix="gate-start-cwd-")  # empty; left for the OS's /tmp cleaning
    light = os.path.join(work, "light_workload.py")
    with open(light, "w") as fh:
        fh.write(LIGHT)
    cmds, heavy = rows(args, light)
    same = same_findings(args)
    torch_rounds = {round(i * args.runs / max(1, args.torch_runs)) for i in range(args.torch_runs)}
    names = list(cmds)
    times: dict[str, list[float]] = {n: [] for n in names}
    cpu: dict[str, list[float]] = {n: [] for n in names}
    rounds: dict[str, list[int]] = {n: [] for n in names}
    codes: dict[str, set[int]] = {n: set() for n in names}
    for round_no in range(-1, args.runs):  # -1: the warm-up round (page cache)
        shift = round_no % len(names)
        for name in names[shift:] + names[:shift]:  # rotated: drift in load hits all alike
            if name in heavy and round_no not in torch_rounds and round_no >= 0:
                continue
            took, used, code, err = timed(*cmds[name])
            if code not in (0, 1):
                print(
                    f"warning: {name} exited {code}: {err.splitlines()[-1:] if err else ''}", file=sys.stderr
                )
            if round_no >= 0:
                times[name].append(took)
                cpu[name].append(used)
                rounds[name].append(round_no)
                codes[name].add(code)
    rng = random.Random(23)
    med = {n: statistics.median(t) for n, t in times.items() if t}
    load = os.getloadavg()[0]
    if os.environ.get("PYTHONDONTWRITEBYTECODE"):
        print("note: PYTHONDONTWRITEBYTECODE is set: compile the trees first (python -m compileall)")
    print(f"{'median s':>9} {'min s':>7} {'IQR s':>7} {'CPU s':>7}  command (runs; load {load:.1f})")
    for n in names:
        if times[n]:
            spread = f"{min(times[n]):7.3f} {iqr(times[n]):7.3f} {statistics.median(cpu[n]):7.3f}"
            print(f"{med[n]:9.3f} {spread}  {n} ({len(times[n])}; exit {sorted(codes[n])})")
    figures: dict[str, Any] = {}
    print("paired differences (median of round-by-round differences, 90 % bootstrap interval):")
    for tree, _ in args.trees:
        for a, b in (
            (f"gate ({tree}) -- light", "light workload alone"),
            (f"gate ({tree})", BARE),
            (f"gate ({tree}) -- torch", "torch workload alone"),
        ):
            if a in med and b in med:
                d = paired(times, rounds, a, b)
                lo, hi = bootstrap(d, rng)
                figures[f"{a} − {b}"] = {"median": statistics.median(d), "interval": [lo, hi], "n": len(d)}
                print(f"  {statistics.median(d):+.3f} s [{lo:+.3f}, {hi:+.3f}]  {a} − {b} ({len(d)} rounds)")
    for (t1, _), (t2, _) in zip(args.trees, args.trees[1:], strict=False):
        a, b = f"gate ({t1}) -- light", f"gate ({t2}) -- light"
        d = paired(times, rounds, a, b)
        lo, hi = bootstrap(d, rng)
        figures[f"{a} − {b}"] = {"median": statistics.median(d), "interval": [lo, hi], "n": len(d)}
        print(f"  {statistics.median(d):+.3f} s [{lo:+.3f}, {hi:+.3f}]  {a} − {b}")
    targets: dict[str, bool] = {}
    for tree, _ in args.trees:
        targets[f"gate ({tree}) alone ≤ 0.3 s"] = med[f"gate ({tree})"] <= 0.3
        if "torch workload alone" not in med:
            continue
        w = med["torch workload alone"]
        pairs = paired(times, rounds, f"gate ({tree}) -- torch", "torch workload alone")
        ratio = med[f"gate ({tree}) -- torch"] / w
        d = figures[f"gate ({tree}) -- light − light workload alone"]
        est = 1 + d["median"] / w
        est_lo, est_hi = 1 + d["interval"][0] / w, 1 + d["interval"][1] / w
        alone = times["torch workload alone"]
        print(
            f"ratio gate ({tree}) -- torch / torch alone: measured {ratio:.3f} ({len(pairs)} rounds; torch "
            f"alone {min(alone):.2f}–{max(alone):.2f} s); from the light workload 1 + {d['median']:.3f} / "
            f"{w:.3f} = {est:.3f} [{est_lo:.3f}, {est_hi:.3f}]"
        )
        figures[f"ratio gate ({tree}) -- torch"] = {
            "measured": ratio,
            "estimated": est,
            "interval": [est_lo, est_hi],
        }
        targets[f"gate ({tree}) -- torch ≤ 1.05 × torch alone (from the light workload's interval)"] = (
            est_hi <= 1.05
        )
        targets[f"gate ({tree}) -- torch ≤ 1.05 × torch alone (measured medians)"] = ratio <= 1.05
    for k, ok in targets.items():
        print(f"target {k}: {'met' if ok else 'MISSED'}")
    if args.breakdown:
        figures["breakdown"] = breakdown(args, med)
    shutil.rmtree(work, ignore_errors=True)
    if args.json:
        doc = {
            "same_findings": same,
            "medians_s": med,
            "runs_s": times,
            "cpu_s": cpu,
            "rounds": rounds,
            "load_average_1m": load,
            "figures": figures,
            "targets": targets,
        }
        print(json.dumps(doc, indent=1, default=str))
    return 0


if __name__ == "__main__":
    sys.exit(main())

"""Where the gate's cost in front of a workload goes, by timestamps across the exec: the harness's spawn,
the gate's first line, its probes' answers, the reaping of its forked probes, the execvp, the workload's
first line, its CUDA start (libcuda loaded, cuInit, primary context, allocation) and the harness's
return. One clock for every process (CLOCK_MONOTONIC is system-wide on Linux).

  P=/opt/torch/.venv/bin/python
  $P benchmarks/gate_exec.py --python $P --tree after=<checkout> --tree before=<other> --runs 15 \
      --variants before --json

Rows, interleaved in rotating order after one warm-up round, each gate run with an empty cache folder:
the light workload alone; per tree `gate -q -- light` and `gate -q` alone (the gate run through a small
driver that patches os.execvp, forked.reap_all and entry.finish to stamp the time, nothing else); with
`--variants TREE`, that tree's `gate -- light` also with the forked probes left unreaped (a diagnosis
only: the workload would inherit them), with a sleep of 150 ms before the exec, with NVML shut down
before its child answers, and with no NVML session at all (timing only). The workload writes what it
inherited (environment names, signal masks and dispositions, descriptors, CPU affinity, rlimits, nice,
children) once per row, so rows can be compared.

Standard library only; each tree's sparkenv must import with --python.
"""

from __future__ import annotations

import argparse
import itertools
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from typing import Any

# The light workload of gate_start.py, stamped: its first line, libcuda loaded, cuInit, the primary
# context, a 1 MiB allocation and a synchronize; then what it inherited (after the stamps).
WORKLOAD = r"""import time
T = {"first line": time.clock_gettime(time.CLOCK_MONOTONIC)}
def stamp(name):
    T[name] = time.clock_gettime(time.CLOCK_MONOTONIC)
import ctypes, json, os
try:
    cu = ctypes.CDLL("libcuda.so.1")
except OSError:
    cu = None
stamp("libcuda loaded")
if cu is not None:
    assert cu.cuInit(0) == 0
    stamp("cuInit done")
    dev, ctx, ptr = ctypes.c_int(), ctypes.c_void_p(), ctypes.c_uint64()
    assert cu.cuDeviceGet(ctypes.byref(dev), 0) == 0
    assert cu.cuDevicePrimaryCtxRetain(ctypes.byref(ctx), dev) == 0
    assert cu.cuCtxSetCurrent(ctx) == 0
    stamp("context")
    assert cu.cuMemAlloc_v2(ctypes.byref(ptr), 1 << 20) == 0
    assert cu.cuCtxSynchronize() == 0
stamp("done")
state = {}
if os.environ.get("GATE_EXEC_STATE"):
    import resource
    status = dict(l.split(":", 1) for l in open("/proc/self/status") if ":" in l)
    fds = {}
    for fd in os.listdir("/proc/self/fd"):
        try:
            fds[fd] = os.readlink(f"/proc/self/fd/{fd}")
        except OSError:
            pass
    kids = []
    for task in os.listdir("/proc/self/task"):
        try:
            kids += open(f"/proc/self/task/{task}/children").read().split()
        except OSError:
            pass
    import re
    fds = {k: re.sub(r"\[\d+\]", "[…]", v) for k, v in fds.items()}
    state = {
        "env": sorted(os.environ),
        "signals": {k: status[k].strip() for k in ("SigBlk", "SigIgn", "SigCgt") if k in status},
        "fds": fds,
        "affinity": len(os.sched_getaffinity(0)),
        "nice": os.nice(0),
        "rlimits": {n: resource.getrlimit(getattr(resource, n)) for n in dir(resource) if n[:7] == "RLIMIT_"},
        "children": kids,
        "cwd": os.getcwd(),
    }
with open(os.environ["GATE_EXEC_OUT"], "w") as fh:
    json.dump({"stamps": T, "state": state}, fh)
"""

# The gate as `python -m sparkenv gate -q ...` runs it, stamped. The variant ($GATE_EXEC_VARIANT):
# "noreap" leaves the forked probes unreaped, "sleep" waits 150 ms before the exec, "shutdown" has NVML
# shut down in its child before it answers, "nonvml" opens no NVML session at all (timing only).
DRIVER = r"""import time
T = {"gate first line": time.clock_gettime(time.CLOCK_MONOTONIC)}
def stamp(name):
    T.setdefault(name, time.clock_gettime(time.CLOCK_MONOTONIC))
import json, os, sys
OUT, VARIANT = os.environ["GATE_EXEC_OUT"] + ".gate", os.environ.get("GATE_EXEC_VARIANT", "")
def save():
    with open(OUT, "w") as fh:
        json.dump({"stamps": T}, fh)
from sparkenv.cli import entry
from sparkenv.gate import entry as gate_entry, early, forked
stamp("entry imported")
real_execvp = os.execvp
def execvp(file, args):
    if VARIANT == "sleep":
        time.sleep(0.15)
    stamp("execvp")
    save()
    real_execvp(file, args)
os.execvp = execvp
real_reap = forked.reap_all
def reap_all():
    stamp("reap start")
    T["children to reap"] = len(forked._exiting)
    if VARIANT != "noreap":
        real_reap()
    stamp("reap done")
forked.reap_all = reap_all
real_collect = forked.Forked._collect
def _collect(self, deadline):
    try:
        return real_collect(self, deadline)
    finally:
        T.setdefault("answers", []).append(time.clock_gettime(time.CLOCK_MONOTONIC))
forked.Forked._collect = _collect
if VARIANT == "shutdown":
    from sparkenv.environment import nvml
    early._gpu_probe = lambda: nvml.probe(shutdown=True)
if VARIANT == "nonvml":  # timing only: what the gate costs when no NVML session precedes the workload
    early._gpu_probe = lambda: {"available": False, "source": "nvml", "error": "left out (gate_exec.py)"}
real_early = gate_entry.start_early
def start_early(a):
    stamp("early start")
    real_early(a)
    stamp("early started")
gate_entry.start_early = start_early
real_started = early._started
# start_early's order of forks (gate/entry.py): the interpreter's probes in two children, or one before
ORDER = ["gpu", "interpreter torch", "interpreter packages", "host"]
if not hasattr(early, "INTERPRETER_PARTS"):
    ORDER = ["gpu", "interpreter", "host"]
def _started(fn):  # each forked probe stamps its own start and end, in a file of its own
    name = ORDER.pop(0) if ORDER else "probe"
    def timed():
        s = time.clock_gettime(time.CLOCK_MONOTONIC)
        try:
            return fn()
        finally:
            e = time.clock_gettime(time.CLOCK_MONOTONIC)
            with open(f"{OUT}.child.{os.getpid()}", "w") as fh:
                json.dump({"name": name, "start": s, "end": e}, fh)
    return real_started(timed)
early._started = _started
real_check_group = getattr(gate_entry, "_check_group", None)
def _check_group(group, receive, alarm):  # each check worker stamps its start, ready, facts, answer
    s = time.clock_gettime(time.CLOCK_MONOTONIC)
    got = {}
    def timed_receive():
        got["ready"] = time.clock_gettime(time.CLOCK_MONOTONIC)
        value = receive()
        got["facts"] = time.clock_gettime(time.CLOCK_MONOTONIC)
        return value
    try:
        return real_check_group(group, timed_receive, alarm)
    finally:
        e = time.clock_gettime(time.CLOCK_MONOTONIC)
        with open(f"{OUT}.child.{os.getpid()}", "w") as fh:
            json.dump({"name": "checks " + "+".join(group), "start": s, "end": e, **got}, fh)
if hasattr(gate_entry, "_check_group"):
    gate_entry._check_group = _check_group
from sparkenv.gate import orchestrate
real_run_all = orchestrate.run_all
def run_all(probes, deadline, meanwhile=None):
    stamp("probes start")
    T["main cpu at probes start"] = time.thread_time()
    def prepared():
        if meanwhile is not None:
            meanwhile()
        stamp("prepared")
        T["main cpu when prepared"] = time.thread_time()
    try:
        return real_run_all(probes, deadline, prepared)
    finally:
        stamp("probes done")
        run_mod = sys.modules.get("sparkenv.gate.run")
        if run_mod is not None and not getattr(run_mod, "_stamped", False):
            run_mod._stamped = True
            real_eval = run_mod.evaluate
            def evaluate(*a, **k):
                try:
                    return real_eval(*a, **k)
                finally:
                    stamp("checks done")
            run_mod.evaluate = evaluate
        emit_mod = sys.modules.get("sparkenv.render.emit")
        if emit_mod is not None and not getattr(emit_mod, "_stamped", False):
            emit_mod._stamped = True
            real_emit = emit_mod.emit
            def emit(*a, **k):
                try:
                    return real_emit(*a, **k)
                finally:
                    stamp("report done")
                    T["main cpu at report done"] = time.thread_time()
            emit_mod.emit = emit
orchestrate.run_all = run_all
real_finish = gate_entry.finish
def finish(code):
    stamp("finish")
    save()
    real_finish(code)
gate_entry.finish = finish
sys.argv = ["sparkenv", *sys.argv[1:]]
entry.main()
"""


def run_once(argv: list[str], env: dict[str, str], cwd: str) -> dict[str, Any]:
    out = tempfile.mktemp(prefix="gate-exec-", dir=cwd)
    cache = tempfile.mkdtemp(prefix="gate-exec-cache-")
    env = {**os.environ, **env, "GATE_EXEC_OUT": out, "SPARKENV_CACHE_DIR": cache}
    spawn = time.clock_gettime(time.CLOCK_MONOTONIC)
    proc = subprocess.run(argv, capture_output=True, env=env, cwd=cwd, timeout=120)
    back = time.clock_gettime(time.CLOCK_MONOTONIC)
    shutil.rmtree(cache, ignore_errors=True)
    got: dict[str, Any] = {"spawn": spawn, "return": back, "code": proc.returncode}
    got["children"] = []
    for name in os.listdir(cwd):
        if name.startswith(os.path.basename(out) + ".gate.child."):
            with open(os.path.join(cwd, name)) as fh:
                got["children"].append(json.load(fh))
            os.unlink(os.path.join(cwd, name))
    for suffix, key in (("", "workload"), (".gate", "gate")):
        try:
            with open(out + suffix) as fh:
                got[key] = json.load(fh)
            os.unlink(out + suffix)
        except OSError:
            pass
    if proc.returncode not in (0, 1):
        got["stderr"] = proc.stderr.decode(errors="replace")[-400:]
    return got


def phases(r: dict[str, Any]) -> dict[str, float]:
    """Seconds between consecutive stamps of one run, named by the later stamp."""
    t: list[tuple[str, float]] = [("spawn", r["spawn"])]
    g = r.get("gate", {}).get("stamps", {})
    for k in ("gate first line", "entry imported", "early start", "early started", "probes start"):
        if k in g:
            t.append((k, g[k]))
    ends = sorted((c["end"], c["name"]) for c in r.get("children", []))
    late = [("last forked answer", max(g["answers"]))] if g.get("answers") else []
    for k, v in sorted(
        [*((k, g[k]) for k in ("prepared", "probes done") if k in g), *late], key=lambda kv: kv[1]
    ):
        t.append((k, v))
    for k in ("checks done", "report done", "reap start", "reap done", "execvp", "finish"):
        if k in g:
            t.append((k, g[k]))
    w = r.get("workload", {}).get("stamps", {})
    for k in ("first line", "libcuda loaded", "cuInit done", "context", "done"):
        if k in w:
            t.append((f"workload {k}", w[k]))
    t.append(("harness back", r["return"]))
    out = {}
    for (_a, ta), (b, tb) in itertools.pairwise(t):
        out[b] = tb - ta
    out["total"] = r["return"] - r["spawn"]
    first = g.get("gate first line")
    for end, name in ends:  # each forked probe's work ends, from the gate's first line
        out[f"(forked {name} done, from the gate's first line)"] = end - first
    for c in r.get("children", []):
        if "ready" in c:  # a check worker: ready for the facts, given them, from the gate's first line
            out[f"(forked {c['name']} ready)"] = c["ready"] - first
            out[f"(forked {c['name']} given the facts)"] = c.get("facts", float("nan")) - first
    if "main cpu when prepared" in g:
        out["(main thread CPU until prepared)"] = g["main cpu when prepared"]
        out["(main thread CPU until the report)"] = g.get("main cpu at report done", float("nan"))
    return out


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--python", default=sys.executable)
    parser.add_argument("--tree", action="append", default=[], metavar="NAME=DIR")
    parser.add_argument("--runs", type=int, default=15)
    parser.add_argument("--variants", action="append", default=[], metavar="TREE", help="diagnostic rows")
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args()
    trees = [tuple(t.split("=", 1)) for t in args.tree] or [("this", "")]
    cwd = tempfile.mkdtemp(prefix="gate-exec-cwd-")  # neutral: no sparkenv of its own on sys.path
    workload = os.path.join(cwd, "light_stamped.py")
    driver = os.path.join(cwd, "gate_driver.py")
    with open(workload, "w") as fh:
        fh.write(WORKLOAD)
    with open(driver, "w") as fh:
        fh.write(DRIVER)
    py = args.python
    gate = [py, driver, "gate", "-q", "--deadline", "25"]
    rows: dict[str, tuple[dict[str, str], list[str]]] = {
        "python -I -c pass": ({}, [py, "-I", "-c", "pass"]),
        "light alone": ({}, [py, workload]),
    }
    for name, path in trees:
        env = {"PYTHONPATH": os.path.abspath(path)} if path else {}
        rows[f"gate ({name}) -- light"] = (env, [*gate, "--", py, workload])
        rows[f"gate ({name})"] = (env, gate)
        if name in args.variants:
            for v in ("noreap", "sleep", "shutdown", "nonvml"):
                rows[f"gate ({name}) -- light [{v}]"] = (
                    {**env, "GATE_EXEC_VARIANT": v},
                    [*gate, "--", py, workload],
                )
    names = list(rows)
    runs: dict[str, list[dict[str, Any]]] = {n: [] for n in names}
    states: dict[str, Any] = {}
    for round_no in range(-1, args.runs):
        shift = round_no % len(names)
        for n in names[shift:] + names[:shift]:
            env, argv = rows[n]
            if round_no == -1:
                env = {**env, "GATE_EXEC_STATE": "1"}
            r = run_once(argv, env, cwd)
            if "stderr" in r:
                print(f"warning: {n} exited {r['code']}: {r['stderr']}", file=sys.stderr)
            if round_no == -1:
                states[n] = r.get("workload", {}).get("state")
            else:
                runs[n].append(r)
    shutil.rmtree(cwd, ignore_errors=True)
    summary: dict[str, dict[str, float]] = {}
    for n in names:
        ph = [phases(r) for r in runs[n]]
        keys = [k for k in ph[0] if all(k in p for p in ph)] if ph else []
        summary[n] = {k: statistics.median(p[k] for p in ph) for k in keys}
        print(f"{n} ({len(ph)} runs), medians of each step, s:")
        for k, v in summary[n].items():
            print(f"  {v:8.4f}  {k}")
    print("added seconds (median of round-by-round differences of the totals):")
    for n in names:
        ref = "light alone" if "-- light" in n else "python -I -c pass" if n.startswith("gate") else None
        if ref:
            d = [
                a["return"] - a["spawn"] - (b["return"] - b["spawn"])
                for a, b in zip(runs[n], runs[ref], strict=True)
            ]
            print(f"  {statistics.median(d):+.4f}  {n} − {ref}")
    base = states.get("light alone") or {}
    for n, s in states.items():
        if n == "light alone" or not s:
            continue
        diff = {k: (base.get(k), v) for k, v in s.items() if base.get(k) != v and k != "env"}
        env_more = sorted(set(s.get("env", [])) - set(base.get("env", [])))
        print(
            f"inherited by the workload under {n}, where it differs from alone: {diff or 'nothing'}; "
            f"environment names added: {env_more}"
        )
    if args.json:
        print(json.dumps({"summary": summary, "states": states, "runs": runs}, default=str))
    return 0


if __name__ == "__main__":
    sys.exit(main())

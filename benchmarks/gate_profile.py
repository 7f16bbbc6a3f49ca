"""Where the default gate's start-up time goes, in one run: the imports by package (`-X importtime`,
self times summed per top-level package, so the threads' interleaved imports do not garble it), each
probe's own wall time in-process, the phases (imports, probes, checks, report) and a cProfile of the
whole in-process run.

  python benchmarks/gate_profile.py                       # this interpreter
  python benchmarks/gate_profile.py --python /opt/torch/.venv/bin/python --repeat 5

It calls probes.gather itself, without the entrypoint's early start, so every probe runs in a thread
of this process (the typer command's way); the entrypoint's own timeline, with its forked probes
(core/pool.py), is `benchmarks/gate_start.py --breakdown`. Standard library only; sparkenv must be
importable by --python (PYTHONPATH works). Figures, not targets: gate_start.py judges the targets.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
from collections import defaultdict

# Run inside --python: the phases and per-probe times of one in-process default gate.
INPROCESS = r"""
import io, json, sys, time
t0 = time.perf_counter()
from sparkenv.gate import entry, fastpath, orchestrate
from sparkenv.gate import probes
from sparkenv.gate.run import evaluate
from sparkenv.render.emit import emit
t_imports = time.perf_counter()
took = {}
real = orchestrate.run_all
def timed(probes_, deadline):
    def wrap(name, fn):
        def run():
            s, c = time.perf_counter(), time.thread_time()
            try:
                return fn()
            finally:
                took[name] = [round(time.perf_counter() - s, 4), round(time.thread_time() - c, 4)]
        return run
    return real({n: wrap(n, f) for n, f in probes_.items()}, deadline)
orchestrate.run_all = timed
raw = probes.gather(probes.Options(deep=%(deep)r))
t_gather = time.perf_counter()
findings, facts = evaluate(raw)
t_eval = time.perf_counter()
from sparkenv.render.options import ReportOptions
from sparkenv.core.report import Report
emit(Report("gate", "x", findings), ReportOptions(quiet=True), stream=io.StringIO())
t_emit = time.perf_counter()
print(json.dumps({"imports": t_imports - t0, "gather": t_gather - t_imports, "gather_s": raw["gather_s"],
                  "checks": t_eval - t_gather, "report": t_emit - t_eval, "probes": took,
                  "probe_errors": raw["probe_errors"]}))
"""


def importtime(python: str) -> dict[str, float]:
    proc = subprocess.run(
        [python, "-X", "importtime", "-m", "sparkenv", "gate", "-q"],
        capture_output=True,
        text=True,
        timeout=120,
    )
    per: dict[str, float] = defaultdict(float)
    for line in proc.stderr.splitlines():
        if not line.startswith("import time:") or "self [us]" in line:
            continue
        self_us, _cum, name = (p.strip() for p in line.split(":", 1)[1].split("|"))
        top = name.strip().split(".")[0]
        # Under threads a module's self time can come out negative (another thread's import was
        # subtracted from it): clamp, the sum per package is what matters.
        per[top] += max(0, int(self_us)) / 1e6
    return dict(sorted(per.items(), key=lambda kv: -kv[1]))


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--python", default=sys.executable)
    parser.add_argument("--repeat", type=int, default=5, help="in-process runs (medians)")
    parser.add_argument("--deep", action="store_true", help="profile `gate --deep` instead")
    parser.add_argument("--top", type=int, default=25)
    parser.add_argument("--cold", action="store_true", help="an empty cache folder for every run")
    args = parser.parse_args()
    imports = importtime(args.python)
    total = sum(imports.values())
    print(f"imports by package, -X importtime self times ({total:.3f} s in all):")
    for name, s in list(imports.items())[: args.top]:
        print(f"  {s:7.4f} s  {name}")
    runs = []
    code = INPROCESS % {"deep": args.deep}
    for _ in range(args.repeat):
        env = dict(os.environ)
        if args.cold:
            env["SPARKENV_CACHE_DIR"] = tempfile.mkdtemp(prefix="gate-profile-")
        out = subprocess.run([args.python, "-c", code], capture_output=True, text=True, timeout=120, env=env)
        if out.returncode:
            print(out.stderr[-2000:], file=sys.stderr)
            return 1
        runs.append(json.loads(out.stdout.strip().splitlines()[-1]))
    print(f"phases in-process, median of {args.repeat} (s):")
    for phase in ("imports", "gather", "checks", "report"):
        print(f"  {statistics.median(r[phase] for r in runs):7.4f}  {phase}")
    # Wall time of a probe includes waiting for the GIL while the others run; its thread's CPU time
    # is what it costs by itself.
    print("  each probe, median: wall s (they run at once), CPU s of its thread")
    names = sorted(
        {n for r in runs for n in r["probes"]},
        key=lambda n: -statistics.median(r["probes"].get(n, [0, 0])[1] for r in runs),
    )
    for n in names:
        wall, cpu = (statistics.median(r["probes"].get(n, [0, 0])[i] for r in runs) for i in (0, 1))
        print(f"  {wall:7.4f}  {cpu:7.4f}  {n}")
    errors = runs[-1]["probe_errors"]
    if errors:
        print(f"  probe errors: {errors}")
    prof = subprocess.run(
        [
            args.python,
            "-c",
            "import cProfile, pstats, sys; sys.argv = ['sparkenv', 'gate', '-q'];"
            "import io; pr = cProfile.Profile(); pr.enable()\n"
            "try:\n from sparkenv.cli.entry import main; main()\nexcept SystemExit: pass\n"
            "pr.disable(); s = io.StringIO(); pstats.Stats(pr, stream=s).sort_stats('cumulative')"
            f".print_stats({args.top}); print(s.getvalue(), file=sys.stderr)",
        ],
        capture_output=True,
        text=True,
        timeout=120,
    )
    print("cProfile of the main thread (probe threads run beside it), by cumulative time:")
    print("\n".join(prof.stderr.strip().splitlines()[: args.top + 12]))
    return 0


if __name__ == "__main__":
    sys.exit(main())

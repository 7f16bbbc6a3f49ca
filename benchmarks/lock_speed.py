"""`sparkenv lock` against the bare `uv pip compile` it drives, side by side, same inputs; cold and warm
caches; and `sparkenv check` on a 50-line requirements file against the interpreter's start and the
parsers of pip and pip-requirements-parser.

    python benchmarks/lock_speed.py [--runs 5] [--input FILE]... [--profile NAME]... [--before DIR]
                                    [--only check]

Cases, each run interleaved, each command first in turn, so drift in the index's latency and the
machine's load hits all alike; wall time and CPU time (user + system of the whole process tree: uv
under sparkenv included) are both printed, with their ratios; and each round's own ratio (a round's
commands meet the index's latency of that moment, which drifts between rounds) as its median with a
90 % bootstrap interval; with --before, the round-by-round difference after - before, likewise:
- warm: uv's cache and sparkenv's metadata cache filled by an earlier run;
- cold: a fresh, empty UV_CACHE_DIR (and SPARKENV_CACHE_DIR) for every single command;
- uv warm, sparkenv cold: the case where sparkenv used to download again what uv had just fetched.
- first: cold caches and no earlier lock, for both (every other case re-locks: bare uv re-reads the
  output file it wrote last time and prefers its versions, and sparkenv hands uv the lock it replaces
  the same way, lock/preferences.py — each command keeps its own output between its runs).
Inputs: the shipped playbook input and benchmarks/inputs/large-project.txt (a vLLM-sized project) unless
--input names others. --profile (repeatable; default: the default profile) locks each input for each
profile, each against the bare uv command of that profile, and with more than one a closing table puts
each case's ratios side by side (e.g. the warm re-lock on an NGC base and on spark-bare:
`--profile ngc-25.11 --profile spark-bare --cases warm`). --before DIR: also time the sparkenv of
another checkout (PYTHONPATH=DIR), in the same rounds: before and after from one run. Needs the package
index (PyPI by default).
Targets: lock <= 1.10 x bare uv, cold and warm; with --breakdown also each lock against the uv run it
drove, timed inside that same lock (issue 45's measure: what sparkenv adds before uv's spawn and after its
exit); check <= 0.15 s.
"""

from __future__ import annotations

import argparse
import os
import random
import resource
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from stats import bootstrap  # noqa: E402  (benchmarks/stats.py, beside this script)

AS_OF = "2026-11-30T00:00:00Z"  # the index as of a date: every run resolves the same set


NEUTRAL = tempfile.mkdtemp(prefix="lockbench-cwd-")
CPU: list[float] = []  # the CPU time (user + system) of the last _time's command
SPAN: list[float] = []  # the wall clock (time.time) at the last _time's spawn and end


def _time(cmd: list[str], env: dict[str, str]) -> float:
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    SPAN[:] = [time.time()]
    start = time.perf_counter()
    # from an empty folder: `python -m sparkenv` puts the working folder first on sys.path, and a
    # checkout there would shadow the one --before names
    proc = subprocess.run(cmd, capture_output=True, text=True, timeout=900, env=_env(env), cwd=NEUTRAL)
    elapsed = time.perf_counter() - start
    SPAN.append(time.time())
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    CPU[:] = [after.ru_utime - before.ru_utime + after.ru_stime - before.ru_stime]
    if proc.returncode not in (0, 1):
        raise SystemExit(f"{cmd[:4]} failed ({proc.returncode}): {proc.stderr[-500:]}")
    return elapsed


def _env(extra: dict[str, str]) -> dict[str, str]:
    """The commands run as installed: bytecode is written and read (an install compiles it; a
    PYTHONDONTWRITEBYTECODE in this shell would make every start compile every module again)."""
    env = {**os.environ, **extra}
    env.pop("PYTHONDONTWRITEBYTECODE", None)
    return env


def _line(label: str, xs: list[float]) -> str:
    return f"{label:<34} median {statistics.median(xs):7.3f} s  {sorted(round(x, 2) for x in xs)}"


def _lock_cases(
    path: str, args: argparse.Namespace, before: dict[str, str] | None, profile: str | None = None
) -> dict[str, tuple[float, ...]]:
    """Each case's ratios of sparkenv lock to bare uv: (medians' ratio, round by round median, its 90 %
    interval)."""
    path = str(Path(path).resolve())
    from sparkenv.environment import profiles
    from sparkenv.lock import inputs, uvdriver
    from sparkenv.lock import plan as run

    prof = profiles.load(profile)
    chosen = ("--profile", profile) if profile else ()
    inp = inputs.read([path])
    work = Path(tempfile.mkdtemp(prefix="lockbench-"))
    resolve_stage, _ = run.plan_stages(inp, prof)
    assert resolve_stage is not None, "nothing to resolve"
    jobs = uvdriver.prepare(work, prof, run.index_options(inp, None, []), [resolve_stage], None, AS_OF)
    bare = [cmd for _, cmd, _ in jobs]  # exactly the uv command sparkenv runs

    def sparkenv_cmd(out: str) -> list[str]:
        return [sys.executable, "-m", "sparkenv", "lock", path, "--output-dir", str(work / out),
                "--exclude-newer", AS_OF, *chosen, "-q"]  # fmt: skip

    outputs = [Path(c[c.index("--output-file") + 1]) for c in bare]  # what bare uv re-reads next time
    warm = {"UV_CACHE_DIR": str(work / "uv"), "SPARKENV_CACHE_DIR": str(work / "sp")}
    warm_before = {"UV_CACHE_DIR": str(work / "uv"), "SPARKENV_CACHE_DIR": str(work / "sp-before")}

    def bare_run(env: dict[str, str]) -> tuple[float, float]:
        if first:
            for out in outputs:
                out.unlink(missing_ok=True)
        wall = cpu = 0.0
        for c in bare:
            wall += _time(c, env)
            cpu += CPU[0]
        return wall, cpu

    timeline = work / "timeline.jsonl"
    # (case, tree) -> one breakdown per run; the tree "after" (this checkout) or "before" (--before)
    parts: dict[tuple[str, str], list[dict[str, float]]] = {}

    def lock_run(
        env: dict[str, str], out: str = "out", extra: tuple[str, ...] = (), tree: str = ""
    ) -> tuple[float, float]:
        if first:
            shutil.rmtree(work / out, ignore_errors=True)
        if tree and args.breakdown:
            timeline.unlink(missing_ok=True)
            env = {**env, "SPARKENV_LOCK_TIMELINE": str(timeline)}
        took = _time([*sparkenv_cmd(out), *extra], env), CPU[0]
        if tree and args.breakdown and timeline.is_file() and (got := _breakdown(timeline, SPAN)):
            parts.setdefault((case, tree), []).append(got)
        return took

    def fresh(keep_uv: bool = False) -> dict[str, str]:
        d = Path(tempfile.mkdtemp(prefix="cold-", dir=work))
        return {
            "UV_CACHE_DIR": warm["UV_CACHE_DIR"] if keep_uv else str(d / "uv"),
            "SPARKENV_CACHE_DIR": str(d / "sp"),
        }

    print(f"inputs: {path} ({len(inp.requirements)} requirements), profile {prof.name}, {args.runs} runs")
    print(f"bare command: {' '.join(bare[0][1:3])} … ({len(bare)} uv process)")
    first, case = False, "fill"
    ratios: dict[str, tuple[float, ...]] = {}
    # uv's cache first: uv's answer with a cold cache and with a warm one may differ (seen with uv 0.13:
    # other versions of two packages), and both locks below must see the same cache
    bare_run(warm)
    lock_run(warm, "out", ("--report", str(work / "report.json")))  # fill the warm caches
    if before:
        lock_run({**warm_before, **before}, "out-before", ("--report", str(work / "report-before.json")))
        print(f"same lock files and findings as before: {_same_output(work)}")
        _same_when_kept(work, warm, lock_run)
    for case in args.cases.split(","):
        first = case == "first"
        rows: dict[str, list[tuple[float, float]]] = {"bare uv pip compile": [], "sparkenv lock": []}
        if before:
            rows["sparkenv lock (before)"] = []
        for round_no in range(args.runs):
            if case == "warm":
                envs = (warm, warm, warm_before)
            elif case in ("cold", "first"):
                envs = (fresh(), fresh(), fresh())
            else:  # uv-warm
                envs = (warm, fresh(keep_uv=True), fresh(keep_uv=True))
            runs = [
                ("bare uv pip compile", lambda e=envs[0]: bare_run(e)),
                ("sparkenv lock", lambda e=envs[1]: lock_run(e, tree="after")),
            ]
            if before:
                runs.append(
                    (
                        "sparkenv lock (before)",
                        lambda e=envs[2]: lock_run({**e, **before}, "out-before", tree="before"),
                    )
                )
            shift = round_no % len(runs)  # each command goes first in turn: no order favoured
            for name, go in runs[shift:] + runs[:shift]:
                rows[name].append(go())
        trees = {t: parts[(case, t)] for t in ("after", "before") if parts.get((case, t))}
        ratios[case] = _print_case(case, rows, trees)
        for d in work.glob("cold-*"):
            shutil.rmtree(d, ignore_errors=True)
    shutil.rmtree(work, ignore_errors=True)
    return ratios


def _print_case(
    case: str, rows: dict[str, list[tuple[float, float]]], trees: dict[str, list[dict[str, float]]]
) -> tuple[float, ...]:
    """One case's medians (wall, CPU), each lock's ratios to bare uv, and the breakdown of each tree;
    returns this sparkenv's ratios (medians' ratio, round by round median and its 90 % interval), then,
    with --breakdown, its ratio to its own uv run (median and 90 % interval)."""
    print(f"[{case}] (load {os.getloadavg()[0]:.1f}; CPU = user + system of the whole process tree)")
    for name, got in rows.items():
        print(_line(f"  {name}", [w for w, _ in got]) + f"  CPU {statistics.median(c for _, c in got):.3f} s")
    med = {k: statistics.median(w for w, _ in v) for k, v in rows.items()}
    cpu = {k: statistics.median(c for _, c in v) for k, v in rows.items()}
    base = "bare uv pip compile"
    rng = random.Random(23)
    mine: tuple[float, ...] = (0.0, 0.0, 0.0, 0.0)
    for name in list(rows)[1:]:
        ratio, cratio = med[name] / med[base], cpu[name] / cpu[base]
        verdict = "met" if ratio <= 1.10 else "MISSED"
        print(f"  {name} / bare uv: wall {ratio:.2f} x (target <= 1.10 x: {verdict}), CPU {cratio:.2f} x")
        # each round's own ratio: the index's latency drifts between rounds, and a round's commands
        # share it
        per = [w / b for (w, _), (b, _) in zip(rows[name], rows[base], strict=True)]
        lo, hi = bootstrap(per, rng)
        print(f"    round by round: {statistics.median(per):.2f} x [{lo:.2f}, {hi:.2f}] (90 % bootstrap)")
        if name == "sparkenv lock":
            mine = (ratio, statistics.median(per), lo, hi)
    if "sparkenv lock (before)" in rows:
        after, before = rows["sparkenv lock"], rows["sparkenv lock (before)"]
        diff = [a - b for (a, _), (b, _) in zip(after, before, strict=True)]
        lo, hi = bootstrap(diff, rng)
        print(f"  after - before, round by round: {statistics.median(diff):+.3f} s [{lo:+.3f}, {hi:+.3f}]")
    if trees:
        own = _print_breakdown(trees, med[base])
        if own is not None:
            mine = (*mine[:4], *own)
    return mine


def _print_side_by_side(got: dict[tuple[str, str], dict[str, tuple[float, ...]]]) -> None:
    """Each input and case, a column per profile: sparkenv lock / the bare uv of that profile, and with
    --breakdown a second table: sparkenv lock / the uv run it drove (issue 45's measure)."""
    profs = list(dict.fromkeys(p for _, p in got))
    print(f"side by side, sparkenv lock / its own bare uv, wall (load {os.getloadavg()[0]:.1f}):")
    print(f"  {'input':<28} {'case':<7} " + " ".join(f"{p:>36}" for p in profs))
    for inp in dict.fromkeys(i for i, _ in got):
        for case in dict.fromkeys(c for (i, _), cases in got.items() if i == inp for c in cases):
            cells = []
            for prof in profs:
                r = got.get((inp, prof), {}).get(case)
                verdict = "" if r is None else ("met" if r[0] <= 1.10 else "MISSED")
                text = "-" if r is None else f"{r[0]:.2f} x ({r[1]:.2f} [{r[2]:.2f}, {r[3]:.2f}]) {verdict}"
                cells.append(f"{text:>36}")
            print(f"  {inp:<28} {case:<7} " + " ".join(cells))
    print("  (medians' ratio; in brackets round by round, median [90 % bootstrap]; target <= 1.10 x)")
    if not any(len(r) > 4 for cases in got.values() for r in cases.values()):
        return
    print("side by side, sparkenv lock / the uv run it drove (timed inside the same lock), wall:")
    for inp in dict.fromkeys(i for i, _ in got):
        for case in dict.fromkeys(c for (i, _), cases in got.items() if i == inp for c in cases):
            cells = []
            for prof in profs:
                r = got.get((inp, prof), {}).get(case)
                if r is None or len(r) < 7:
                    cells.append(f"{'-':>36}")
                    continue
                verdict = "met" if r[4] <= 1.10 else "MISSED"
                cells.append(f"{f'{r[4]:.2f} x [{r[5]:.2f}, {r[6]:.2f}] {verdict}':>36}")
            print(f"  {inp:<28} {case:<7} " + " ".join(cells))
    print("  (median of each lock's own ratio [90 % bootstrap]; target <= 1.10 x)")


def _breakdown(timeline: Path, span: list[float]) -> dict[str, float]:
    """One run's timeline (sparkenv/lock/timeline.py) as spans from this benchmark's spawn of it; {}
    when it lacks the marks these spans need."""
    import json

    marks = {m[0]: m[1:] for m in json.loads(timeline.read_text().splitlines()[-1])["marks"]}
    if not {"uv spawned", "uv exited", "exit"} <= marks.keys():  # an older sparkenv's timeline: none
        return {}
    start, end = span
    spawned, exited = marks["uv spawned"], marks["uv exited"]
    return {
        "to uv's spawn": spawned[0] - start,
        "uv (spawn to exit)": exited[0] - spawned[0],
        "after uv's exit": end - exited[0],
        "main CPU before spawn": spawned[1],
        "main CPU while uv runs": exited[1] - spawned[1],
        "other threads' CPU while uv runs": (exited[2] - spawned[2]) - (exited[1] - spawned[1]),
        "CPU after uv's exit": marks["exit"][2] - exited[2],
        **{f"  to {name}": v[0] - start for name, v in marks.items()},
    }


def _print_breakdown(
    trees: dict[str, list[dict[str, float]]], bare: float
) -> tuple[float, float, float] | None:
    """Medians of each span (--breakdown), a column per tree (after, and before where --before names
    one and its sparkenv writes a timeline); uv's own time under sparkenv against the bare uv's; and
    each lock against the uv run it drove, timed inside that lock (issue 45's measure: what sparkenv adds
    before uv's spawn and after its exit), returned for this tree as (median, 90 % interval)."""
    names = list(trees)
    print(
        "  breakdown of sparkenv lock (medians; wall from its spawn, CPU of its own process): "
        + " | ".join(names)
    )
    keys = list(dict.fromkeys(k for runs in trees.values() for r in runs for k in r))
    for key in keys:
        cells = []
        for name in names:
            got = [r[key] for r in trees[name] if key in r]
            cells.append(f"{statistics.median(got):7.3f} s" if got else f"{'-':>9}")
        print(f"    {key:<34} {' | '.join(cells)}")
    own = None
    rng = random.Random(29)
    for name in names:
        uv = statistics.median(r["uv (spawn to exit)"] for r in trees[name])
        print(f"    uv under sparkenv ({name}) / bare uv: {uv / bare:.2f} x (its CPU beside uv slows uv)")
        per = [
            (r["to uv's spawn"] + r["uv (spawn to exit)"] + r["after uv's exit"]) / r["uv (spawn to exit)"]
            for r in trees[name]
        ]
        mid, (lo, hi) = statistics.median(per), bootstrap(per, rng)
        verdict = "met" if mid <= 1.10 else "MISSED"
        print(
            f"    sparkenv lock ({name}) / the uv run it drove: {mid:.2f} x [{lo:.2f}, {hi:.2f}] "
            f"(target <= 1.10 x: {verdict})"
        )
        if name == "after":
            own = (mid, lo, hi)
    return own


def _same_output(work: Path) -> str:
    """Whether this sparkenv and the one of --before wrote the same lock files, byte for byte, and
    reported the same findings (their run times aside): a speed change must change neither."""
    import json

    def files(folder: Path) -> dict[str, bytes]:
        return {p.name: p.read_bytes() for p in sorted(folder.glob("*"))}

    def findings(report: Path) -> object:  # the two output folders' names aside
        return json.loads(report.read_text().replace("out-before", "out"))["findings"]

    differ = [
        what
        for what, same in (
            ("lock files", files(work / "out") == files(work / "out-before")),
            ("findings", findings(work / "report.json") == findings(work / "report-before.json")),
        )
        if not same
    ]
    return "yes" if not differ else "NO: " + ", ".join(differ) + " differ"


def _same_when_kept(work: Path, warm: dict[str, str], lock_run) -> None:  # type: ignore[no-untyped-def]
    """The re-lock right after the fill, which takes the judgement kept by it (lock/judged_cache.py),
    against before's full judgement: the same files and findings."""
    import json

    marks = work / "kept-timeline.jsonl"
    env = {**warm, "SPARKENV_LOCK_TIMELINE": str(marks)}
    lock_run(env, "out", ("--report", str(work / "report.json")))
    took = "none"
    if marks.is_file():
        names = [m[0] for m in json.loads(marks.read_text().splitlines()[-1])["marks"]]
        took = "yes" if "kept judgement taken" in names else "no"
    print(f"re-lock that took a kept judgement ({took}): same lock files and findings as before: "
          f"{_same_output(work)}")  # fmt: skip


def _check_case(args: argparse.Namespace, before: dict[str, str] | None) -> None:
    work = Path(tempfile.mkdtemp(prefix="checkbench-"))
    req = work / "fifty.txt"
    names = [f"pkg-{i}=={i}.0" for i in range(40)] + [
        "transformers==4.57.1", "peft==0.19.1", "datasets==4.3.0", "trl==0.26.1", "flash-attn",
        "torch>=2.8", "cupy-cuda12x", "bitsandbytes==0.49.2", "# sparkenv-bench", "unsloth",
    ]  # fmt: skip
    req.write_text("\n".join(names) + "\n")
    py = sys.executable
    pip_parse = (
        "from pip._internal.network.session import PipSession; from pip._internal.req.req_file import "
        f"parse_requirements; list(parse_requirements({str(req)!r}, session=PipSession()))"
    )
    prp_parse = (
        f"from pip_requirements_parser import RequirementsFile; RequirementsFile.from_file({str(req)!r})"
    )
    rows: dict[str, tuple[list[str], dict[str, str]]] = {
        "sparkenv check, 50-line file": ([py, "-m", "sparkenv", "check", str(req), "-q"], {}),
        "python -I -c pass": ([py, "-I", "-c", "pass"], {}),
        "pip's parser (parse_requirements)": ([py, "-c", pip_parse], {}),
        "pip-requirements-parser": ([py, "-c", prp_parse], {}),
    }
    if before:
        rows["sparkenv check (before)"] = ([py, "-m", "sparkenv", "check", str(req), "-q"], before)
    for cmd, env in rows.values():  # warm-up: page cache, .pyc where they may be written
        _time(cmd, env)
    times: dict[str, list[float]] = {k: [] for k in rows}
    cpu: dict[str, list[float]] = {k: [] for k in rows}
    for round_no in range(args.runs):
        names_ = list(rows)
        shift = round_no % len(names_)
        for name in names_[shift:] + names_[:shift]:
            times[name].append(_time(*rows[name]))
            cpu[name].append(CPU[0])
    print(f"check ({args.runs} runs, interleaved; load {os.getloadavg()[0]:.1f}; CPU = user + system):")
    for name in rows:
        print(_line(f"  {name}", times[name]) + f"  CPU {statistics.median(cpu[name]):.3f} s")
    med = {k: statistics.median(v) for k, v in times.items()}
    main_row = "sparkenv check, 50-line file"
    for ref in list(rows)[1:]:
        print(f"  ratio check / {ref}: {med[main_row] / med[ref]:.2f} x")
    verdict = "met" if med[main_row] <= 0.15 else "MISSED"
    used = statistics.median(cpu[main_row])
    print(
        f"  target check <= 0.15 s: wall {verdict} ({med[main_row]:.3f} s); CPU "
        f"{'met' if used <= 0.15 else 'MISSED'} ({used:.3f} s: what wall is on an idle core)"
    )
    shutil.rmtree(work, ignore_errors=True)


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--runs", type=int, default=5)
    ap.add_argument("--input", action="append", help="inputs to lock (repeatable); default: see above")
    ap.add_argument(
        "--cases", default="warm,cold,uv-warm,first", help="comma-separated: warm, cold, uv-warm, first"
    )
    ap.add_argument("--before", metavar="DIR", help="a checkout whose sparkenv runs beside this one")
    ap.add_argument(
        "--profile", action="append", help="lock for this profile (repeatable); default: the default one"
    )
    ap.add_argument("--only", choices=("lock", "check"), help="only the lock cases, or only check")
    ap.add_argument(
        "--breakdown",
        action="store_true",
        help="where this sparkenv's lock spends its wall time: before uv's spawn, uv, after uv's exit",
    )
    args = ap.parse_args()
    before = {"PYTHONPATH": str(Path(args.before).resolve())} if args.before else None
    if args.only != "check":
        default = [
            ROOT / "lockfiles" / "inputs" / "playbook-unsloth.txt",
            ROOT / "benchmarks" / "inputs" / "large-project.txt",
        ]
        got = {}
        for path in args.input or [str(p) for p in default]:
            for prof in args.profile or [None]:
                got[(Path(path).name, prof or "default")] = _lock_cases(path, args, before, prof)
        if len(args.profile or []) > 1:
            _print_side_by_side(got)
    if args.only != "lock":
        _check_case(args, before)


if __name__ == "__main__":
    main()

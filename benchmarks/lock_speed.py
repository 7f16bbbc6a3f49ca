"""`sparkenv lock` against the bare `uv pip compile` it drives, side by side, same inputs; cold and warm
caches; and `sparkenv check` on a 50-line requirements file.

    python benchmarks/lock_speed.py [--runs 5] [--input lockfiles/inputs/playbook-unsloth.txt]

Cases, each run interleaved (bare uv, then sparkenv) so drift in the index's latency hits both alike:
- warm: uv's cache and sparkenv's metadata cache filled by an earlier run;
- cold: a fresh, empty UV_CACHE_DIR (and SPARKENV_CACHE_DIR) for every single command;
- uv warm, sparkenv cold: the case where sparkenv used to download again what uv had just fetched.
Needs the package index (PyPI by default). Targets: lock <= 1.10 x bare uv, cold and warm; check <= 0.3 s.
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
sys.path.insert(0, str(ROOT))
AS_OF = "2026-11-30T00:00:00Z"  # the index as of a date: every run resolves the same set


def _time(cmd: list[str], env: dict[str, str]) -> float:
    start = time.perf_counter()
    proc = subprocess.run(cmd, capture_output=True, text=True, timeout=900, env={**os.environ, **env})
    elapsed = time.perf_counter() - start
    if proc.returncode not in (0, 1):
        raise SystemExit(f"{cmd[:4]} failed ({proc.returncode}): {proc.stderr[-500:]}")
    return elapsed


def _line(label: str, xs: list[float]) -> str:
    return f"{label:<34} median {statistics.median(xs):7.3f} s  {sorted(round(x, 2) for x in xs)}"


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--runs", type=int, default=5)
    ap.add_argument("--input", default=str(ROOT / "lockfiles" / "inputs" / "playbook-unsloth.txt"))
    ap.add_argument("--cases", default="warm,cold,uv-warm", help="comma-separated: warm, cold, uv-warm")
    args = ap.parse_args()

    from sparkenv import profiles
    from sparkenv.resolve import inputs, run, uvdriver

    prof = profiles.load(None)
    inp = inputs.read([args.input])
    work = Path(tempfile.mkdtemp(prefix="lockbench-"))
    resolve_stage, _ = run._stages(inp, prof)
    assert resolve_stage is not None, "nothing to resolve"
    jobs = uvdriver.prepare(work, prof, run._index(inp, None, []), [resolve_stage], None, AS_OF)
    bare = [cmd for _, cmd, _ in jobs]  # exactly the uv command sparkenv runs
    sparkenv = [sys.executable, "-m", "sparkenv", "lock", args.input, "--output-dir", str(work / "out"),
                "--exclude-newer", AS_OF, "-q"]  # fmt: skip
    warm = {"UV_CACHE_DIR": str(work / "uv"), "SPARKENV_CACHE_DIR": str(work / "sp")}

    def bare_run(env: dict[str, str]) -> float:
        return sum(_time(c, env) for c in bare)

    def fresh(keep_uv: bool = False) -> dict[str, str]:
        d = Path(tempfile.mkdtemp(prefix="cold-", dir=work))
        return {
            "UV_CACHE_DIR": warm["UV_CACHE_DIR"] if keep_uv else str(d / "uv"),
            "SPARKENV_CACHE_DIR": str(d / "sp"),
        }

    print(
        f"inputs: {args.input} ({len(inp.requirements)} requirements), profile {prof.name}, {args.runs} runs"
    )
    print(f"bare command: {' '.join(bare[0][1:3])} … ({len(bare)} uv process)")
    _time(sparkenv, warm)  # fill the warm caches
    bare_run(warm)
    for case in args.cases.split(","):
        t_bare, t_lock = [], []
        for _ in range(args.runs):
            if case == "warm":
                t_bare.append(bare_run(warm))
                t_lock.append(_time(sparkenv, warm))
            elif case == "cold":
                t_bare.append(bare_run(fresh()))
                t_lock.append(_time(sparkenv, fresh()))
            elif case == "uv-warm":
                t_bare.append(bare_run(warm))
                t_lock.append(_time(sparkenv, fresh(keep_uv=True)))
        mb, ml = statistics.median(t_bare), statistics.median(t_lock)
        print(f"[{case}]")
        print(_line("  bare uv pip compile", t_bare))
        print(_line("  sparkenv lock", t_lock))
        print(f"  ratio: {ml / mb:.2f} x  (target <= 1.10 x)")
        for d in work.glob("cold-*"):
            shutil.rmtree(d, ignore_errors=True)

    req = work / "fifty.txt"
    names = [f"pkg-{i}=={i}.0" for i in range(40)] + [
        "transformers==4.57.1", "peft==0.19.1", "datasets==4.3.0", "trl==0.26.1", "flash-attn",
        "torch>=2.8", "cupy-cuda12x", "bitsandbytes==0.49.2", "# sparkenv-bench", "unsloth",
    ]  # fmt: skip
    req.write_text("\n".join(names) + "\n")
    check = [sys.executable, "-m", "sparkenv", "check", str(req), "-q"]
    t_check = sorted(_time(check, {}) for _ in range(args.runs))
    print(_line("sparkenv check, 50-line file", t_check) + "  (target <= 0.3 s)")
    shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()

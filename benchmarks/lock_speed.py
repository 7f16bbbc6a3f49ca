"""`sparkenv lock` against the bare `uv pip compile` it drives, warm cache, same inputs, side by side;
and `sparkenv check` on a 50-line requirements file.

    python benchmarks/lock_speed.py [--runs 5] [--input lockfiles/inputs/playbook-unsloth.txt]

Needs the package index (PyPI by default). Targets: lock overhead <= 10 % over bare uv; check <= 0.3 s.
"""

from __future__ import annotations

import argparse
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))


def _time(cmd: list[str]) -> float:
    start = time.perf_counter()
    proc = subprocess.run(cmd, capture_output=True, text=True, timeout=900)
    elapsed = time.perf_counter() - start
    if proc.returncode not in (0, 1):
        raise SystemExit(f"{cmd[:4]} failed ({proc.returncode}): {proc.stderr[-500:]}")
    return elapsed


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--runs", type=int, default=5)
    ap.add_argument("--input", default=str(ROOT / "lockfiles" / "inputs" / "playbook-unsloth.txt"))
    args = ap.parse_args()

    from sparkenv.resolve import inputs, profiles, run, uvdriver

    prof = profiles.load(None)
    inp = inputs.read([args.input])
    work = Path(tempfile.mkdtemp(prefix="lockbench-"))
    resolve_stage, _ = run._stages(inp, prof)
    assert resolve_stage is not None, "nothing to resolve"
    jobs = uvdriver.prepare(work, prof, run._index(inp, None, []), [resolve_stage])
    sparkenv = [sys.executable, "-m", "sparkenv", "lock", args.input, "--output-dir", str(work / "out"), "-q"]
    bare = [cmd for _, cmd, _ in jobs]  # the same uv commands sparkenv runs, one per install stage

    def bare_run() -> float:  # the stages one after the other, as a user would type them
        return sum(_time(c) for c in bare)

    _time(sparkenv)  # warm uv's cache and sparkenv's metadata cache
    bare_run()
    t_bare, t_lock = [], []
    for _ in range(args.runs):  # interleaved, so drift in the index's latency hits both alike
        t_bare.append(bare_run())
        t_lock.append(_time(sparkenv))
    mb, ml = statistics.median(t_bare), statistics.median(t_lock)
    print(
        f"inputs: {args.input} ({len(inp.requirements)} requirements), profile {prof.name}, {args.runs} runs"
    )
    print(
        f"bare uv pip compile ({len(bare)} stage(s), sequential): median {mb:.3f} s  "
        f"{sorted(round(x, 3) for x in t_bare)}"
    )
    print(f"sparkenv lock:                          median {ml:.3f} s  {sorted(round(x, 3) for x in t_lock)}")
    print(f"overhead: {100 * (ml - mb) / mb:+.1f} %  (target <= +10 %)")

    req = work / "fifty.txt"
    names = [f"pkg-{i}=={i}.0" for i in range(40)] + [
        "transformers==4.57.1", "peft==0.19.1", "datasets==4.3.0", "trl==0.26.1", "flash-attn",
        "torch>=2.8", "cupy-cuda12x", "bitsandbytes==0.49.2", "# sparkenv-bench", "unsloth",
    ]  # fmt: skip
    req.write_text("\n".join(names) + "\n")
    check = [sys.executable, "-m", "sparkenv", "check", str(req), "-q"]
    t_check = sorted(_time(check) for _ in range(args.runs))
    print(
        f"sparkenv check, 50-line file (whole process): median {statistics.median(t_check):.3f} s  "
        "(target <= 0.3 s)"
    )


if __name__ == "__main__":
    main()

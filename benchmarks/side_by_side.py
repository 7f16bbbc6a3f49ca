"""Time commands side by side, interleaved, and print medians and ratios against the first one.

python benchmarks/side_by_side.py --runs 7 -- "sparkenv audit /opt/torch/.venv" "python -m pip check"
python benchmarks/side_by_side.py --fresh-cache 1 -- "$P -m sparkenv audit V" "$P -m sparkenv audit V"

Every command runs with $SPARKENV_CACHE_DIR set: the commands named by --fresh-cache (1-based) get an
empty folder for every run (a first audit, a container started from an image); the others share one
folder kept from run to run (filled by the untimed warm-up round: an unchanged environment audited
again). A command's text may start with NAME=VALUE words, set for that command alone.

--drop N=STORE removes one store of sparkenv's cache (core/cache.py: the folder STORE in the command's
$SPARKENV_CACHE_DIR) before every run of command N: the command without that cache, every other one warm.
Give that command a SPARKENV_CACHE_DIR of its own, or it empties the store the others share:

python benchmarks/side_by_side.py --drop 2=audit -- "python -m sparkenv audit V" \
    "SPARKENV_CACHE_DIR=/tmp/no-audit python -m sparkenv audit V"
"""

from __future__ import annotations

import argparse
import os
import resource
import shlex
import shutil
import statistics
import subprocess
import sys
import tempfile
import time


def _split(command: str) -> tuple[dict[str, str], list[str]]:
    words = shlex.split(command)
    env = {}
    while words and "=" in words[0] and not words[0].startswith(("=", "-", "/")):
        key, _, value = words.pop(0).partition("=")
        env[key] = value
    return env, words


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=7)
    parser.add_argument("--warmup", type=int, default=1, help="untimed rounds first (page cache, .pyc)")
    parser.add_argument(
        "--fresh-cache",
        type=int,
        action="append",
        default=[],
        metavar="N",
        help="command N (1-based) gets an empty $SPARKENV_CACHE_DIR every run; repeatable",
    )
    parser.add_argument(
        "--drop",
        action="append",
        default=[],
        metavar="N=STORE",
        help="remove the cache store STORE before every run of command N (1-based); repeatable",
    )
    parser.add_argument(
        "--limit",
        action="append",
        default=[],
        metavar="N=SECONDS",
        help="a target: command N's median at most SECONDS (printed met or MISSED); repeatable",
    )
    parser.add_argument(
        "commands", nargs="+", help="shell-quoted commands; the first is measured against the rest"
    )
    args = parser.parse_args()
    times: dict[int, list[float]] = {i: [] for i in range(len(args.commands))}
    cpu: dict[int, list[float]] = {i: [] for i in range(len(args.commands))}
    kept = tempfile.mkdtemp(prefix="side-by-side-cache-")
    # from an empty folder: `python -m` puts the working folder first on sys.path, where a checkout
    # would shadow the one a command's PYTHONPATH names
    neutral = tempfile.mkdtemp(prefix="side-by-side-cwd-")
    for round_no in range(args.warmup + args.runs):
        order = list(range(len(args.commands)))
        shift = round_no % len(order)
        for i in order[shift:] + order[:shift]:  # rotated, interleaved: drift in load hits all alike
            own, words = _split(args.commands[i])
            fresh = i + 1 in args.fresh_cache
            cache = tempfile.mkdtemp(prefix="side-by-side-fresh-") if fresh else kept
            env = {**os.environ, "SPARKENV_CACHE_DIR": cache, **own}
            for n, _, store in (d.partition("=") for d in args.drop):
                if int(n) == i + 1:
                    shutil.rmtree(os.path.join(env["SPARKENV_CACHE_DIR"], store), ignore_errors=True)
            before = resource.getrusage(resource.RUSAGE_CHILDREN)
            start = time.perf_counter()
            proc = subprocess.run(words, capture_output=True, timeout=600, env=env, cwd=neutral)
            took = time.perf_counter() - start
            after = resource.getrusage(resource.RUSAGE_CHILDREN)
            if fresh:
                shutil.rmtree(cache, ignore_errors=True)
            if round_no >= args.warmup:
                times[i].append(took)
                cpu[i].append(after.ru_utime - before.ru_utime + after.ru_stime - before.ru_stime)
            if proc.returncode not in (0, 1):
                print(
                    f"warning: {args.commands[i]!r} exited {proc.returncode}: {proc.stderr.decode()[-300:]}"
                )
    shutil.rmtree(kept, ignore_errors=True)
    shutil.rmtree(neutral, ignore_errors=True)
    med = {i: statistics.median(t) for i, t in times.items()}
    load = os.getloadavg()[0]
    print(f"{'median s':>9}  {'min s':>7}  {'CPU s':>7}  command ({args.runs} runs; load {load:.1f})")
    for i, command in enumerate(args.commands):
        note = "  [empty cache each run]" if i + 1 in args.fresh_cache else ""
        note += "".join(
            f"  [without {store}]" for n, _, store in (d.partition("=") for d in args.drop) if int(n) == i + 1
        )
        print(f"{med[i]:9.3f}  {min(times[i]):7.3f}  {statistics.median(cpu[i]):7.3f}  {command}{note}")
    for i, command in enumerate(args.commands[1:], 1):
        print(f"ratio {args.commands[0]!r} / {command!r} = {med[0] / med[i]:.3f}")
    for limit in args.limit:
        n, _, seconds = limit.partition("=")
        i, most = int(n) - 1, float(seconds)
        verdict = "met" if med[i] <= most else "MISSED"
        print(f"target {args.commands[i]!r} <= {most} s: {verdict} ({med[i]:.3f} s)")
    return 0


if __name__ == "__main__":
    sys.exit(main())

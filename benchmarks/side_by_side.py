"""Time commands side by side, interleaved, and print medians and ratios against the first one.

python benchmarks/side_by_side.py --runs 7 -- "sparkenv audit /opt/torch/.venv" "python -m pip check"
"""

from __future__ import annotations

import argparse
import shlex
import statistics
import subprocess
import sys
import time


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=7)
    parser.add_argument(
        "commands", nargs="+", help="shell-quoted commands; the first is measured against the rest"
    )
    args = parser.parse_args()
    times: dict[str, list[float]] = {c: [] for c in args.commands}
    for _ in range(args.runs):
        for command in args.commands:  # interleaved, so drift in machine load hits all alike
            start = time.perf_counter()
            proc = subprocess.run(shlex.split(command), capture_output=True, timeout=600)
            times[command].append(time.perf_counter() - start)
            if proc.returncode not in (0, 1):
                print(f"warning: {command!r} exited {proc.returncode}: {proc.stderr.decode()[-300:]}")
    first = args.commands[0]
    med = {c: statistics.median(t) for c, t in times.items()}
    for command in args.commands:
        print(f"{med[command]:8.3f} s median of {args.runs}  {command}")
    for command in args.commands[1:]:
        print(f"ratio {first!r} / {command!r} = {med[first] / med[command]:.3f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())

"""What loading the data files as validated records costs at start-up, side by side in one run: a fresh
interpreter that parses every sparkenv/data/*.toml raw (what the callers read before the records) against
one that loads each through sparkenv.knowledge (parse, validate, canonicalise, build the records), and
the bare interpreter. Interleaved rounds after a warm-up; medians; ratios against the raw parse.

  python benchmarks/knowledge_load.py --runs 21

Standard library only; sparkenv must be importable by --python.
"""

from __future__ import annotations

import argparse
import statistics
import subprocess
import sys
import time

from sparkenv.knowledge import FILES as NAMES  # every data file, as the package lists them

# Both import what every command imports anyway (the report: Finding, Status, GotchaId), so the
# difference is the records alone.
COMMON = "import sparkenv.core.report\n"
RAW = COMMON + f"from sparkenv.core import datafiles\nfor n in {NAMES!r}: datafiles.load(n)"
RECORDS = COMMON + (
    f"import importlib\nfor n in {NAMES!r}: getattr(importlib.import_module('sparkenv.knowledge'), n)()"
)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=21)
    parser.add_argument("--python", default=sys.executable)
    args = parser.parse_args()
    commands = {
        "raw TOML parse (reference)": [args.python, "-I", "-c", RAW],
        "validated records": [args.python, "-I", "-c", RECORDS],
        "python -I -c pass": [args.python, "-I", "-c", "pass"],
    }
    times: dict[str, list[float]] = {k: [] for k in commands}
    for round_ in range(args.runs + 1):
        for name, argv in commands.items():  # interleaved, so drift in machine load hits all alike
            start = time.perf_counter()
            subprocess.run(argv, check=True, timeout=120)
            if round_:  # the first round warms caches and writes .pyc files
                times[name].append(time.perf_counter() - start)
    ref = statistics.median(times["raw TOML parse (reference)"])
    bare = statistics.median(times["python -I -c pass"])
    for name, ts in times.items():
        med = statistics.median(ts)
        print(
            f"{name:28} median {med * 1000:7.1f} ms  {med / ref:5.2f} x reference  "
            f"({(med - bare) * 1000:+6.1f} ms over a bare interpreter)"
        )
    return 0


if __name__ == "__main__":
    sys.exit(main())

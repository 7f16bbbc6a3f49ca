"""Start-up cost of the SDPA override's .pth: `python -c pass` in one venv without and one with it.

    python benchmarks/pth_startup.py [--runs 21]

Two fresh venvs side by side, runs interleaved, medians printed with the ratio (with / without). The
test suite checks only that the hook imports nothing beyond itself; the time lives here.
"""

from __future__ import annotations

import argparse
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path


def interpreter(venv: Path) -> Path:
    return venv / "bin" / "python"


def timed(python: Path) -> float:
    t0 = time.perf_counter()
    subprocess.run([str(python), "-c", "pass"], check=True, timeout=60)
    return time.perf_counter() - t0


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=21)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="sparkenv-pth-bench-") as tmp:
        plain, patched = Path(tmp) / "plain", Path(tmp) / "patched"
        for venv in (plain, patched):
            subprocess.run(
                [sys.executable, "-m", "venv", "--without-pip", str(venv)], check=True, timeout=120
            )
        subprocess.run(
            [sys.executable, "-m", "sparkenv", "patch", "sdpa", "--install", str(patched)],
            check=True,
            timeout=120,
            stdout=subprocess.DEVNULL,
        )
        without, with_pth = [], []
        for _ in range(args.runs):
            without.append(timed(interpreter(plain)))
            with_pth.append(timed(interpreter(patched)))
    a, b = statistics.median(without), statistics.median(with_pth)
    print(f"python -c pass, median of {args.runs}: without .pth {a * 1000:.1f} ms, with {b * 1000:.1f} ms")
    print(f"ratio with/without: {b / a:.3f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())

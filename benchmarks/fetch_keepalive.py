"""sparkenv's HTTP requests with connections kept open (sparkenv/index/fetch.py's pool) against one connection
per request (the pool held at zero idle connections: what urllib does), side by side in one run.

    python benchmarks/fetch_keepalive.py [--runs 5] [--lock pylock.toml]

The requests are those a cold lock makes after uv names its picks: the tail (central directory) of every
binary wheel a lock holds, by range request, 16 threads at once as lock/early.py reads them, and one
thread at a time as the members of one wheel were read. The lock file: --lock, else one written by
`sparkenv lock` of the shipped playbook input (needs the package index the client is configured for).
Printed: wall time, this process's CPU time, connections opened; medians; interleaved rounds.
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import tempfile
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from sparkenv.core.datafiles import parse_toml  # noqa: E402
from sparkenv.index import (  # noqa: E402
    credentials,
    fetch,
    wheel_files,
)


def _urls(lock: Path) -> list[str]:
    data = parse_toml(lock.read_text(encoding="utf-8"))
    out = []
    for pkg in data.get("packages", []):
        for wheel in pkg.get("wheels", [])[:1]:
            if wheel_files.is_binary(wheel["url"].rsplit("/", 1)[-1]):
                out.append(wheel["url"])
    return out


def _tail(url: str) -> int:
    with fetch.urlopen(credentials.request(url, {"Range": "bytes=-65577"}), 30) as resp:
        return len(resp.read())


def _round(urls: list[str], keep: bool, threads: int) -> tuple[float, float, int]:
    fetch.close_idle()
    fetch.IDLE_PER_HOST = 16 if keep else 0
    opened = fetch.opened
    cpu, wall = time.process_time(), time.perf_counter()
    with ThreadPoolExecutor(threads) as pool:
        assert all(pool.map(_tail, urls))
    return time.perf_counter() - wall, time.process_time() - cpu, fetch.opened - opened


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--runs", type=int, default=5)
    ap.add_argument("--lock", type=Path, help="a pylock.toml whose binary wheels are read")
    args = ap.parse_args()
    lock = args.lock
    if lock is None:
        out = Path(tempfile.mkdtemp(prefix="keepalive-"))
        inp = ROOT / "lockfiles" / "inputs" / "playbook-unsloth.txt"
        subprocess.run(
            [sys.executable, "-m", "sparkenv", "lock", str(inp), "--output-dir", str(out), "-q"],
            check=False, capture_output=True, timeout=900, cwd=ROOT,
        )  # fmt: skip
        lock = next(out.glob("pylock.*.toml"))
    urls = _urls(lock)
    print(f"{len(urls)} binary wheels of {lock} (load {os.getloadavg()[0]:.1f})")
    for threads in (16, 1):
        rows: dict[bool, list[tuple[float, float, int]]] = {True: [], False: []}
        for n in range(args.runs):
            for keep in (True, False) if n % 2 == 0 else (False, True):
                rows[keep].append(_round(urls, keep, threads))
        for keep, got in rows.items():
            label = "kept open" if keep else "one per request"
            wall = statistics.median(g[0] for g in got)
            print(
                f"  {threads:>2} thread(s), {label:<16} wall median {wall:.3f} s"
                f"  CPU {statistics.median(g[1] for g in got):.3f} s"
                f"  connections {statistics.median(g[2] for g in got):.0f}"
            )


if __name__ == "__main__":
    main()

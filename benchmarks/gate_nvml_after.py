"""What an NVML session costs the CUDA start that follows it (the gate's case: its NVML child closes,
then the workload initialises CUDA). Prints the NVML child's exit time after it answered (with and
without nvmlShutdown), and the light CUDA workload of gate_start.py alone, right after an NVML session
closed, and 50 / 150 ms after, interleaved.

  /opt/torch/.venv/bin/python benchmarks/gate_nvml_after.py --rounds 7     # needs pynvml and a GPU
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import tempfile
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import gate_start


def nvml_session(shutdown: bool) -> tuple[float, float]:
    """A forked child opens NVML, reads what the gate reads, answers, exits: (answer s, exit s)."""
    r, w = os.pipe()
    t0 = time.perf_counter()
    pid = os.fork()
    if pid == 0:  # the child: leaves through os._exit whatever happens (no pynvml: no answer)
        try:
            os.close(r)
            import pynvml

            pynvml.nvmlInit()
            h = pynvml.nvmlDeviceGetHandleByIndex(0)
            pynvml.nvmlDeviceGetName(h)
            pynvml.nvmlDeviceGetMemoryInfo(h)
            pynvml.nvmlDeviceGetCudaComputeCapability(h)
            if shutdown:
                pynvml.nvmlShutdown()
            os.write(w, b"x")
        finally:
            os._exit(0)
    os.close(w)
    if not os.read(r, 1):
        raise SystemExit("no NVML here (pynvml or a driver missing)")
    t1 = time.perf_counter()
    os.waitpid(pid, 0)
    os.close(r)
    return t1 - t0, time.perf_counter() - t1


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=7)
    args = parser.parse_args()
    for shutdown in (False, True):
        got = [nvml_session(shutdown) for _ in range(args.rounds)]
        print(
            f"NVML child (nvmlShutdown {'called' if shutdown else 'left to the exit'}): answers in "
            f"{statistics.median(g[0] for g in got):.4f} s, "
            f"exits {statistics.median(g[1] for g in got):.4f} s later"
        )
    with tempfile.NamedTemporaryFile("w", suffix=".py", delete=False) as fh:
        fh.write(gate_start.LIGHT)
    waits = {
        "alone": None,
        "right after an NVML session closed": 0.0,
        "50 ms after": 0.05,
        "150 ms after": 0.15,
    }
    rows: dict[str, list[float]] = {k: [] for k in waits}
    for _ in range(args.rounds):
        for name, wait in waits.items():
            if wait is None:
                time.sleep(0.3)
            else:
                nvml_session(False)
                time.sleep(wait)
            start = time.perf_counter()
            subprocess.run([sys.executable, fh.name], check=True)
            rows[name].append(time.perf_counter() - start)
    os.unlink(fh.name)
    for name, v in rows.items():
        med = statistics.median(v)
        print(f"light workload {name}: median {med:.4f} s, min {min(v):.4f} s ({len(v)} runs)")
    return 0


if __name__ == "__main__":
    sys.exit(main())

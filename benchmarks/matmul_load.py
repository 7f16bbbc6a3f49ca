"""A steady GPU load for benchmarks/watch_overhead.py: a bf16 matrix product in a loop for --seconds,
its throughput measured after a warm-up, printed as one JSON line. Also the co-tenant (--hold-gib: hold
that much GPU memory while it runs)."""

from __future__ import annotations

import argparse
import json
import time

import torch


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--seconds", type=float, default=30.0)
    ap.add_argument("--warmup", type=float, default=5.0)
    ap.add_argument("--size", type=int, default=8192)
    ap.add_argument("--hold-gib", type=float, default=0.0)
    a = ap.parse_args()
    held = torch.empty(int(a.hold_gib * 2**30), dtype=torch.uint8, device="cuda") if a.hold_gib else None
    x = torch.randn(a.size, a.size, device="cuda", dtype=torch.bfloat16)
    y = torch.randn(a.size, a.size, device="cuda", dtype=torch.bfloat16)
    flop = 2 * a.size**3
    start = time.monotonic()
    while time.monotonic() - start < a.warmup:
        torch.matmul(x, y)
        torch.cuda.synchronize()
    n, t0 = 0, time.monotonic()
    while time.monotonic() - start < a.warmup + a.seconds:
        for _ in range(20):
            torch.matmul(x, y)
        torch.cuda.synchronize()
        n += 20
    took = time.monotonic() - t0
    print(json.dumps({"tflops": n * flop / took / 1e12, "iters": n, "seconds": took}), flush=True)
    del held


if __name__ == "__main__":
    main()

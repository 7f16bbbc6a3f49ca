"""Two "nodes" on one host, side by side in one run (G10, issues 15/16):

1. `sparkenv gate --link-test` on both nodes (node ranks 0 and 1 of a torchrun-style launch, master
   127.0.0.1) and the same all-reduce timed by a plain torch.distributed script — same buffer, same
   backend, same iteration rule — so the gate's figure is checked against the reference;
2. the agreement lines of both gates, and a disagreement (a different lock on node 1);
3. NCCL with two ranks on ONE GPU (what a single-GPU machine allows): what NCCL does with it.

    python benchmarks/multinode_link.py [--backend gloo|nccl] [--mib 64] [--out DIR]

Prints one JSON object (also written to DIR/multinode_link.json). Run with the interpreter that has torch.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import socket
import statistics
import subprocess
import sys
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
REPO = HERE.parent


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def worker(rank: int, port: int, backend: str, mib: int, iterations: int) -> None:
    """One rank of the plain reference: warm-up, then `iterations` timed all-reduces; median."""
    import torch
    import torch.distributed as dist

    store = dist.TCPStore("127.0.0.1", port, 2, rank == 0, wait_for_workers=False)
    dist.init_process_group(backend, store=store, rank=rank, world_size=2)
    device = torch.device("cuda", 0) if backend == "nccl" else torch.device("cpu")
    buf = torch.ones(mib * (1 << 20) // 4, dtype=torch.float32, device=device)

    def sync() -> None:
        if backend == "nccl":
            torch.cuda.synchronize(device)

    dist.all_reduce(buf)
    sync()
    times = []
    for _ in range(iterations):
        t = time.perf_counter()
        dist.all_reduce(buf)
        sync()
        times.append(time.perf_counter() - t)
    median = statistics.median(times)
    size = buf.numel() * 4
    print(
        json.dumps(
            {"rank": rank, "median_s": median, "busbw_gbs": size / median / 1e9, "iterations": iterations}
        )
    )
    dist.destroy_process_group()


def two_ranks(
    backend: str, mib: int, iterations: int, timeout: float, env: dict[str, str] | None = None
) -> list[tuple[int, str, str]]:
    """Both ranks of the plain reference (this file's --worker) at once: (exit, stdout, stderr) of each;
    a rank still running after `timeout` is killed and says so on its stderr."""
    port = free_port()
    procs = [
        subprocess.Popen(
            [
                sys.executable,
                __file__,
                *("--worker", str(r), "--port", str(port), "--backend", backend),
                *("--mib", str(mib), "--iterations", str(iterations)),
            ],
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
            env=env,
        )
        for r in (0, 1)
    ]
    out = []
    for p in procs:
        try:
            o, e = p.communicate(timeout=timeout)
        except subprocess.TimeoutExpired:
            p.kill()
            o, e = p.communicate()
            e += "\n(killed after the timeout)"
        out.append((p.returncode, o, e))
    return out


def plain(backend: str, mib: int, iterations: int, timeout: float = 120) -> dict:
    out = []
    for _, o, e in two_ranks(backend, mib, iterations, timeout):
        lines = [ln for ln in o.splitlines() if ln.startswith("{")]
        out.append(json.loads(lines[-1]) if lines else {"error": _tail(e)})
    return {"backend": backend, "ranks": out}


def _tail(text: str, n: int = 6) -> list[str]:
    return [ln for ln in text.strip().splitlines() if ln.strip()][-n:]


def gates(extra_env: dict[int, dict[str, str]], args: list[str], deadline: float) -> dict:
    """Both nodes' gates at once, each in front of `true` with torchrun's arguments (read as the launch)."""
    port = free_port()
    procs = {}
    for r in (0, 1):
        env = {**os.environ, "PYTHONPATH": str(REPO), **extra_env.get(r, {})}
        argv = [
            sys.executable,
            "-m",
            "sparkenv",
            "gate",
            "--deadline",
            str(deadline),
            *args,
            "--",
            "true",
            "torchrun",
            "--nnodes",
            "2",
            "--nproc-per-node",
            "1",
            "--node-rank",
            str(r),
            "--master-addr",
            "127.0.0.1",
            "--master-port",
            str(port),
            "train.py",
        ]
        procs[r] = (
            subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env),
            time.monotonic(),
        )
    out = {}
    for r, (p, t0) in procs.items():
        _, e = p.communicate(timeout=deadline + 30)
        out[r] = {
            "exit": p.returncode,
            "seconds": round(time.monotonic() - t0, 2),
            "g10": [ln for ln in e.splitlines() if ln.startswith("G10 ")],
            "g1": [ln for ln in e.splitlines() if ln.startswith("G1 ")],
        }
    return out


def duplicate_gpu(timeout: float = 40) -> dict:
    """NCCL, two ranks, both on cuda:0: NCCL normally refuses this; record exactly what it says."""
    out = []
    for code, o, e in two_ranks("nccl", 16, 5, timeout, env={**os.environ, "NCCL_DEBUG": "WARN"}):
        hits = [
            ln for ln in e.splitlines() if re.search(r"Duplicate GPU|NCCL (WARN|error)|Error|invalid", ln)
        ]
        out.append({"exit": code, "stdout": o.strip()[-300:], "nccl_lines": hits[-8:], "tail": _tail(e)})
    return {"ranks": out}


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--worker", type=int)
    ap.add_argument("--port", type=int)
    ap.add_argument("--backend", default=None)
    ap.add_argument("--mib", type=int, default=64)
    ap.add_argument("--iterations", type=int, default=20)
    ap.add_argument("--out", default=None)
    ap.add_argument("--skip-duplicate", action="store_true")
    a = ap.parse_args()
    if a.worker is not None:
        worker(a.worker, a.port, a.backend, a.mib, a.iterations)
        return 0
    import torch

    cuda = torch.cuda.is_available()
    backend = a.backend or ("nccl" if cuda and torch.cuda.device_count() >= 2 else "gloo")
    lock_a = Path(a.out or "/tmp") / "pylock.a.toml"
    lock_b = Path(a.out or "/tmp") / "pylock.b.toml"
    lock_a.parent.mkdir(parents=True, exist_ok=True)
    lock_a.write_text('lock-version = "1.0"\n# a\n')
    lock_b.write_text('lock-version = "1.0"\n# b\n')
    result: dict = {"torch": torch.__version__, "cuda": torch.version.cuda, "gpus": torch.cuda.device_count()}
    started = time.monotonic()
    env = {"SPARKENV_LOCK": str(lock_a), "SPARKENV_LINK_BACKEND": backend}
    result["link_test_gate"] = gates({0: env, 1: env}, ["--link-test"], 40)
    result["plain_all_reduce"] = plain(backend, 64, 20)
    result["disagree_lock"] = gates(
        {0: env, 1: {**env, "SPARKENV_LOCK": str(lock_b)}}, ["--policy", "strict"], 30
    )
    if cuda and torch.cuda.device_count() < 2:
        nccl_env = {**env, "SPARKENV_LINK_BACKEND": "nccl"}
        result["link_test_gate_nccl_one_gpu"] = gates({0: nccl_env, 1: nccl_env}, ["--link-test"], 40)
        if not a.skip_duplicate:
            result["nccl_two_ranks_one_gpu"] = duplicate_gpu()
    result["seconds"] = round(time.monotonic() - started, 1)
    text = json.dumps(result, indent=1)
    print(text)
    if a.out:
        (Path(a.out) / "multinode_link.json").write_text(text + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())

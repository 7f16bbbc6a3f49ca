"""Run by the gate with the workload's interpreter: publish this node's digest in the job's own
torch.distributed TCPStore, wait (bounded) for the peers', and optionally time an all-reduce between the
nodes. Standalone on purpose (stdlib + torch only): it runs where sparkenv itself may not be importable
(the runtime of a built image lives apart from the base's site-packages).

Input: one JSON object as the only argument. Output: one JSON object on stdout. Exit 0 even when peers
are missing: what was seen is the answer; the gate judges it."""

from __future__ import annotations

import contextlib
import json
import os
import platform
import socket
import statistics
import sys
import time
from datetime import timedelta
from typing import Any

PREFIX = "sparkenv/agree/"


def torch_facts(torch: Any) -> dict[str, Any]:
    facts: dict[str, Any] = {
        "torch": torch.__version__,
        "cuda": torch.version.cuda,
        "python": platform.python_version(),
        "gpu": None,
        "nccl": None,
    }
    try:
        if torch.cuda.is_available():
            facts["gpu"] = torch.cuda.get_device_name(0)
            facts["nccl"] = ".".join(str(x) for x in torch.cuda.nccl.version())
    except Exception as exc:  # a broken CUDA stack is for G1 to judge; the digest says what it saw
        facts["gpu"] = f"error: {exc.__class__.__name__}"
    return facts


def _route_interface(peer: str) -> str | None:
    """The interface this node reaches `peer` through (what gloo must bind to; by default it binds to
    whatever the hostname resolves to, often not the link)."""
    import fcntl
    import struct

    try:
        with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as s:
            s.connect((peer, 9))  # UDP: no packet is sent, the kernel only picks the route
            local = s.getsockname()[0]
            for _, name in socket.if_nameindex():
                req = struct.pack("256s", name.encode()[:15])
                with contextlib.suppress(OSError):
                    if socket.inet_ntoa(fcntl.ioctl(s.fileno(), 0x8915, req)[20:24]) == local:
                        return name
    except OSError:
        return None
    return None


def link_test(
    torch: Any, dist: Any, store: Any, rank: int, world: int, cfg: dict[str, Any]
) -> dict[str, Any]:
    wanted = cfg.get("backend")
    use_cuda = wanted == "nccl" or (wanted != "gloo" and torch.cuda.is_available())
    backend = "nccl" if use_cuda else "gloo"
    started = time.monotonic()
    budget = float(cfg.get("budget_s", 5.0))
    result: dict[str, Any] = {"backend": backend, "world": world, "buffer_mib": cfg["buffer_mib"]}
    if backend == "gloo" and not os.environ.get("GLOO_SOCKET_IFNAME"):
        iface = _route_interface(cfg["host"])
        if iface and not (iface == "lo" and not cfg["host"].startswith("127.")):
            os.environ["GLOO_SOCKET_IFNAME"] = iface
            result["gloo_interface"] = iface
    try:
        dist.init_process_group(
            backend,
            store=dist.PrefixStore(PREFIX + "link/", store),
            rank=rank,
            world_size=world,
            timeout=timedelta(seconds=max(1.0, budget)),
        )
        device = (
            torch.device("cuda", int(os.environ.get("LOCAL_RANK", "0")) % max(1, torch.cuda.device_count()))
            if use_cuda
            else torch.device("cpu")
        )
        if use_cuda:
            torch.cuda.set_device(device)
        n = int(cfg["buffer_mib"]) * (1 << 20) // 4
        buf = torch.ones(n, dtype=torch.float32, device=device)
        times: list[float] = []

        def sync() -> None:
            if use_cuda:
                torch.cuda.synchronize(device)

        dist.all_reduce(buf)  # warm-up: connections and NCCL's channels are set up here, not timed
        sync()
        result["setup_s"] = round(time.monotonic() - started, 3)
        for _ in range(int(cfg["max_iterations"])):
            # every rank must run the same number of iterations: agree on stopping through the result
            t = time.perf_counter()
            dist.all_reduce(buf)
            sync()
            times.append(time.perf_counter() - t)
            stop = torch.tensor([1.0 if time.monotonic() - started > budget / 2 else 0.0], device=device)
            dist.all_reduce(stop)
            if stop.item() > 0:
                break
        size = n * 4
        median = statistics.median(times)
        result.update(
            iterations=len(times),
            median_s=round(median, 6),
            algbw_gbs=round(size / median / 1e9, 3),
            busbw_gbs=round(size / median / 1e9 * 2 * (world - 1) / world, 3),
            correct=bool(buf[0].item() == float(world ** (len(times) + 1))),
        )
    except Exception as exc:
        result["error"] = _reason(exc)
    finally:
        try:
            if dist.is_initialized():
                dist.destroy_process_group()
        except Exception:
            pass
    result["seconds"] = round(time.monotonic() - started, 3)
    return result


def _orphan_watch() -> None:
    """Exit when the gate that started us is gone (killed by a signal it could not pass on)."""
    import threading

    parent = os.getppid()

    def watch() -> None:
        while True:
            time.sleep(0.2)
            if os.getppid() != parent:
                os._exit(3)

    threading.Thread(target=watch, daemon=True).start()


def main() -> int:
    _orphan_watch()
    cfg = json.loads(sys.argv[1])
    started = time.monotonic()
    # An absolute CLOCK_MONOTONIC time (system-wide on Linux): our own start-up counts against it too.
    deadline = float(cfg["deadline_monotonic"])
    out: dict[str, Any] = {"store": f"{cfg['host']}:{cfg['port']}", "is_master": cfg["is_master"]}
    try:
        import torch
        import torch.distributed as dist
    except Exception as exc:
        out["error"] = f"torch.distributed is not importable here: {exc.__class__.__name__}: {exc}"
        print(json.dumps(out))
        return 0
    out["import_s"] = round(time.monotonic() - started, 3)
    digest = {**cfg["digest"], **torch_facts(torch)}
    nodes = int(cfg["nodes"])
    store, error = _open_store(dist, cfg, deadline, started)
    if store is None:
        out["error"] = error
        out["me"] = {"ordinal": cfg.get("node_rank"), "name": socket.gethostname(), "digest": digest}
        print(json.dumps(out))
        return 0
    rank = cfg.get("node_rank")
    if rank is None:
        rank = 0 if cfg["is_master"] else int(store.add(PREFIX + "join", 1))
    me = {
        "ordinal": int(rank),
        "node_rank": cfg.get("node_rank"),
        "name": socket.gethostname(),
        "digest": digest,
    }
    peers, missing = _exchange(store, me, nodes, deadline)
    out.update(me=me, peers=peers, missing=missing, waited_s=round(time.monotonic() - started, 3))
    if cfg.get("link_test") and not missing:
        budget = min(float(cfg["link_test"]["budget_s"]), deadline - time.monotonic() - 0.5)
        out["link_test"] = link_test(
            torch,
            dist,
            store,
            int(rank),
            nodes,
            {**cfg["link_test"], "budget_s": budget, "host": cfg["host"]},
        )
    # The host keeps the store up until every peer has read it (bounded by the deadline).
    store.add(PREFIX + "done", 1)
    if cfg["is_master"]:
        while time.monotonic() < deadline - 0.2:
            if int(store.add(PREFIX + "done", 0)) >= nodes - len(missing):
                break
            time.sleep(0.02)
    out["seconds"] = round(time.monotonic() - started, 3)
    print(json.dumps(out))
    return 0


def _open_store(dist: Any, cfg: dict[str, Any], deadline: float, started: float) -> tuple[Any, str]:
    """(the job's TCPStore, hosted here on the master or reached from a peer, ""), or (None, why not)."""
    if not cfg["is_master"] and not _reachable(cfg["host"], int(cfg["port"]), deadline - 0.3):
        return None, (
            f"could not reach the store at {cfg['host']}:{cfg['port']} within "
            f"{time.monotonic() - started:.1f} s: is node 0's gate running?"
        )
    try:
        store = dist.TCPStore(
            cfg["host"],
            int(cfg["port"]),
            None,
            bool(cfg["is_master"]),
            timedelta(seconds=max(0.5, deadline - time.monotonic())),
            wait_for_workers=False,
        )
    except Exception as exc:
        role = "host" if cfg["is_master"] else "reach"
        where = f"{cfg['host']}:{cfg['port']}"
        return None, f"could not {role} the store at {where}: {exc.__class__.__name__}: {_first(exc)}"
    return store, ""


def _exchange(
    store: Any, me: dict[str, Any], nodes: int, deadline: float
) -> tuple[dict[str, Any], list[int]]:
    """Publish this node's digest, wait (bounded) for every node's: (the peers seen, the ordinals missing)."""
    store.set(PREFIX + f"node/{me['ordinal']}", json.dumps(me))
    keys = [PREFIX + f"node/{i}" for i in range(nodes)]
    with contextlib.suppress(Exception):  # who is missing is read below
        store.wait(keys, timedelta(seconds=max(0.1, deadline - time.monotonic() - 0.3)))
    peers: dict[str, Any] = {}
    missing: list[int] = []
    for i, key in enumerate(keys):
        if store.check([key]):
            peers[str(i)] = json.loads(store.get(key))
        else:
            missing.append(i)
    return peers, missing


def _reachable(host: str, port: int, until: float) -> bool:
    """Wait for the host's store to listen. TCPStore's own client retries with a growing back-off that
    overruns its timeout; a plain connect every 0.1 s keeps within ours."""
    while True:
        try:
            wait = max(0.05, min(1.0, until - time.monotonic()))
            with socket.create_connection((host, port), timeout=wait):
                return True
        except OSError:
            if time.monotonic() + 0.1 >= until:
                return False
            time.sleep(0.1)


def _reason(exc: BaseException) -> str:
    """The exception's first line, and NCCL's own reason after its "Last error:" line when there is one
    (e.g. 'Duplicate GPU detected : rank 0 and rank 1 both on CUDA device 60')."""
    lines = [ln.strip() for ln in str(exc).strip().splitlines() if ln.strip()]
    text = f"{exc.__class__.__name__}: {lines[0] if lines else ''}"
    for i, line in enumerate(lines[:-1]):
        if line.startswith("Last error"):
            text += f"; NCCL: {lines[i + 1]}"
            break
    return text


def _first(exc: BaseException) -> str:
    text = str(exc).strip()
    return text.splitlines()[0] if text else ""


if __name__ == "__main__":
    code = main()
    sys.stdout.flush()
    # Skip the interpreter's teardown (the store's server thread, gloo), which is slow: the answer is out,
    # and the peers have read what they needed before we got here.
    os._exit(code)

"""Run by the gate with the workload's interpreter when the workload heads, joins or uses a Ray cluster:
publish this node's digest in the cluster's key-value store (the GCS), wait (bounded) for the expected
nodes' digests, and optionally time transfers between the nodes through tasks placed one per node.
Standalone on purpose (standard library + ray; torch when the interpreter has it), like store_agent.py.

Expected: every node alive in the cluster, every node whose gate is publishing now, and at least the
count the launch names. A record counts only when its writer is seen alive during this exchange, so
records an earlier run left in the store never count. Each agent stops once every expected node has
published and has seen it, so the last one out still finds the others' final records.

Input: one JSON object as the only argument. Output: one JSON object on stdout; exit 0 even when nodes
are missing (the gate judges what was seen).
"""

from __future__ import annotations

import contextlib
import importlib.util
import ipaddress
import json
import math
import os
import socket
import statistics
import sys
import time
import uuid
from typing import Any

# Run as a script, Python puts this folder first on sys.path: its modules (launch.py, probe.py, …) must not
# shadow what ray imports.
HERE = os.path.dirname(os.path.abspath(__file__))
sys.path[:] = [p for p in sys.path if os.path.abspath(p or ".") != HERE]

ALIVE = 0  # GcsNodeInfo.GcsNodeState.ALIVE


def _store_agent() -> Any:
    spec = importlib.util.spec_from_file_location(
        "sparkenv_store_agent", os.path.join(HERE, "store_agent.py")
    )
    module = importlib.util.module_from_spec(spec)  # type: ignore[arg-type]
    sys.modules[spec.name] = module  # type: ignore[union-attr]
    spec.loader.exec_module(module)  # type: ignore[union-attr]
    return module


def _source_ip(host: str) -> str | None:
    """The address this node reaches `host` from (what Ray calls this node when it joins)."""
    try:
        with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as s:
            s.connect((host, 9))  # UDP: nothing is sent, the kernel picks the route
            return str(s.getsockname()[0])
    except OSError:
        return None


def _call(fn: Any, *args: Any, timeout: float) -> Any:
    try:
        return fn(*args, timeout=max(0.1, timeout))
    except TypeError:  # older Ray: no timeout argument
        return fn(*args)


class Exchange:
    def __init__(self, gcs: Any, cfg: dict[str, Any], me: dict[str, Any], deadline: float) -> None:
        self.gcs, self.cfg, self.me, self.deadline = gcs, cfg, me, deadline
        self.ns = cfg["namespace"].encode()
        self.prefix = cfg["prefix"] + "node/"
        self.run = uuid.uuid4().hex[:12]
        self.beat = 0
        self.first: dict[str, int] = {}  # ip -> heartbeat at first sight (a record left by an earlier run)
        self.live: dict[str, dict[str, Any]] = {}
        self.alive: dict[str, bool] = {}  # ip -> is the head

    def _t(self) -> float:
        return self.deadline - time.monotonic()

    def nodes(self) -> None:
        infos = _call(self.gcs.get_all_node_info, timeout=self._t())
        self.alive = {
            str(n.node_manager_address): bool(n.is_head_node) for n in infos.values() if n.state == ALIVE
        }
        self.gpus = {
            str(n.node_manager_address): n.resources_total.get("GPU", 0.0)
            for n in infos.values()
            if n.state == ALIVE
        }

    def read(self) -> None:
        keys = _call(self.gcs.internal_kv_keys, self.prefix.encode(), self.ns, timeout=self._t())
        for key in keys:
            ip = key.decode()[len(self.prefix) :]
            if ip == self.me["ip"]:
                continue
            raw = _call(self.gcs.internal_kv_get, key, self.ns, timeout=self._t())
            try:
                rec = json.loads(raw or b"{}")
            except ValueError:
                continue
            seen_me = f"{self.me['ip']}/{self.run}" in (rec.get("seen") or [])
            if ip not in self.first and not seen_me:
                self.first[ip] = int(rec.get("beat") or 0)
            elif seen_me or int(rec.get("beat") or 0) != self.first.get(ip):
                self.live[ip] = rec

    def publish(self) -> None:
        self.beat += 1
        rec = {
            **self.me,
            "run": self.run,
            "beat": self.beat,
            "expects": self.wants(),
            "seen": sorted(f"{ip}/{r.get('run')}" for ip, r in self.live.items()),
        }
        key = (self.prefix + self.me["ip"]).encode()
        _call(self.gcs.internal_kv_put, key, json.dumps(rec).encode(), True, self.ns, timeout=self._t())

    def wants(self) -> int:
        """The node count this node's launch needs: what it names, or TP × PP over a node's GPUs."""
        need = int(self.cfg.get("nodes") or 1)
        per_node = max(self.gpus.values(), default=0.0)
        if per_node >= 1:
            need = max(need, math.ceil(int(self.cfg.get("gpus_needed") or 1) / per_node))
        return need

    def expected(self) -> tuple[set[str], int]:
        ips = {self.me["ip"], *self.alive, *self.live}
        wants = [self.wants(), *(int(r.get("expects") or 1) for r in self.live.values())]
        return ips, max(len(ips), *wants)

    def done(self) -> bool:
        ips, count = self.expected()
        if len(self.live) + 1 < count or not ips <= {self.me["ip"], *self.live}:
            return False
        mine = f"{self.me['ip']}/{self.run}"
        return all(mine in (r.get("seen") or []) for r in self.live.values())

    def loop(self) -> None:
        while True:
            self.nodes()
            self.read()
            self.publish()
            if self.done() or self._t() < 0.3:
                return
            time.sleep(0.1)

    def answer(self) -> dict[str, Any]:
        ips, count = self.expected()
        head = next((ip for ip, is_head in self.alive.items() if is_head), None)
        order = sorted({self.me["ip"], *self.live}, key=lambda ip: (ip != head, _ip_key(ip)))
        peers: dict[str, Any] = {}
        for i, ip in enumerate(order):
            rec = self.me if ip == self.me["ip"] else self.live[ip]
            peers[str(i)] = {
                "ordinal": i,
                "name": rec.get("name"),
                "ip": ip,
                "role": rec.get("role"),
                "digest": rec.get("digest"),
            }
        missing = sorted(ips - set(order), key=_ip_key)
        return {
            "peers": peers,
            "missing": missing,
            "unseen": max(0, count - len(order) - len(missing)),  # expected, but neither alive nor publishing
            "nodes": count,
            "cluster": {"alive": len(self.alive), "head": head, "gpus": self.gpus},
        }


def _ip_key(ip: str) -> tuple[int, str]:
    try:
        return int(ipaddress.ip_address(ip)), ip
    except ValueError:
        return 1 << 130, ip


def ray_link_test(
    ray: Any, address: str, nodes: int, cfg: dict[str, Any], deadline: float, agent: Any
) -> dict[str, Any]:
    """One task per node through Ray's placement (node affinity): the time a peer node takes to pull an
    object this node put (Ray's object transfer), and, when the tasks' interpreter has torch, the same
    all-reduce as under torchrun (gloo or NCCL) between the tasks."""
    started = time.monotonic()
    size = int(cfg["buffer_mib"]) * (1 << 20)
    out: dict[str, Any] = {"buffer_mib": cfg["buffer_mib"]}
    try:
        from ray.util.scheduling_strategies import NodeAffinitySchedulingStrategy

        ray.init(address=address, namespace=cfg["namespace"], log_to_driver=False, logging_level="ERROR")
        here = ray.get_runtime_context().get_node_id()
        others: list[Any] = []
        while time.monotonic() < deadline - 2.0:  # nodes whose gate just passed are still joining
            others = [n for n in ray.nodes() if n.get("Alive") and n["NodeID"] != here]
            if len(others) + 1 >= nodes:
                break
            time.sleep(0.2)
        if not others:
            out["error"] = f"only this node is alive in the cluster after {time.monotonic() - started:.1f} s"
            return out
        peer = others[0]
        out["to"] = peer.get("NodeManagerAddress")

        def on(node_id: str) -> Any:
            return NodeAffinitySchedulingStrategy(node_id=node_id, soft=False)

        @ray.remote(num_cpus=0)
        def pull(refs: list[Any]) -> float:
            t = time.perf_counter()
            ray.get(refs[0])
            return time.perf_counter() - t

        budget = max(1.0, (deadline - time.monotonic()) / 2)
        t0 = time.monotonic()
        ray.get(pull.options(scheduling_strategy=on(peer["NodeID"])).remote([ray.put(b"")]))  # start a worker
        out["setup_s"] = round(time.monotonic() - started, 3)
        times = []
        for _ in range(int(cfg["max_iterations"])):
            ref = ray.put(bytes(size))  # a fresh object each time: a pulled object is cached on the peer
            times.append(ray.get(pull.options(scheduling_strategy=on(peer["NodeID"])).remote([ref])))
            del ref
            if time.monotonic() - t0 > budget / 2:
                break
        median = statistics.median(times)
        out.update(iterations=len(times), median_s=round(median, 6), gbs=round(size / median / 1e9, 3))
        if cfg.get("torch"):
            out["torch"] = _torch_between_tasks(ray, on, here, peer, cfg, deadline, agent)
    except Exception as exc:
        out["error"] = (
            f"{exc.__class__.__name__}: {str(exc).strip().splitlines()[0] if str(exc).strip() else ''}"
        )
    out["seconds"] = round(time.monotonic() - started, 3)
    return out


def _torch_between_tasks(
    ray: Any, on: Any, here: str, peer: dict[str, Any], cfg: dict[str, Any], deadline: float, agent: Any
) -> dict[str, Any]:
    """store_agent.link_test in two tasks (rank 0 on this node, hosting a TCPStore; rank 1 on the peer)."""
    import ray.cloudpickle

    ray.cloudpickle.register_pickle_by_value(agent)  # the workers cannot import it by name
    host = cfg["my_ip"]
    with socket.socket() as s:
        s.bind((host, 0))
        port = s.getsockname()[1]
    budget = max(1.0, deadline - time.monotonic() - 1.0)
    test = {**cfg, "budget_s": budget, "host": host}

    @ray.remote(num_cpus=0)
    def rank(r: int) -> dict[str, Any]:
        from datetime import timedelta

        import torch
        import torch.distributed as dist

        store = dist.TCPStore(host, port, 2, r == 0, timedelta(seconds=budget), wait_for_workers=False)
        return agent.link_test(torch, dist, store, r, 2, test)

    refs = [
        rank.options(scheduling_strategy=on(here)).remote(0),
        rank.options(scheduling_strategy=on(peer["NodeID"])).remote(1),
    ]
    return ray.get(refs, timeout=budget + 1.0)[0]


def main() -> int:
    started = time.monotonic()
    cfg = json.loads(sys.argv[1])
    deadline = float(cfg["deadline_monotonic"])
    agent = _store_agent()
    agent._orphan_watch()
    out: dict[str, Any] = {"store": f"Ray GCS {cfg.get('address')}"}
    me: dict[str, Any] = {"name": socket.gethostname(), "role": cfg["role"]}
    try:
        import ray
        from ray._private.services import canonicalize_bootstrap_address_or_die
        from ray._raylet import GcsClient
    except Exception as exc:
        out["error"] = f"ray is not importable here: {exc.__class__.__name__}: {exc}"
        print(json.dumps(out))
        return 0
    digest = dict(cfg["digest"])
    try:
        import torch

        digest.update(agent.torch_facts(torch))
    except Exception:  # a Ray workload without torch: the digest says what it could
        import platform

        digest["python"] = platform.python_version()
    me["digest"] = digest
    out["import_s"] = round(time.monotonic() - started, 3)
    try:
        address = canonicalize_bootstrap_address_or_die(cfg.get("address") or "auto")
    except Exception as exc:
        if not cfg.get("address"):  # nothing named, none running: the workload starts Ray on this node
            out["skipped"] = "no running Ray cluster found: the workload starts its own, on this node"
        else:
            out["error"] = f"no Ray cluster at {cfg['address']}: {str(exc).strip().splitlines()[0]}"
        print(json.dumps(out))
        return 0
    out["store"] = f"Ray GCS {address}"
    host, _, port = address.rpartition(":")
    me["ip"] = cfg.get("node_ip") or _source_ip(host) or socket.gethostname()
    if not agent._reachable(host, int(port), deadline - 0.3):
        out["error"] = (
            f"could not reach the Ray GCS at {address} within {time.monotonic() - started:.1f} s: is "
            "`ray start --head` running there?"
        )
        print(json.dumps(out))
        return 0
    ex = Exchange(GcsClient(address=address), {**cfg, "nodes": cfg.get("nodes") or 1}, me, deadline)
    try:
        ex.loop()
    except Exception as exc:
        out["error"] = f"the Ray key-value exchange at {address} failed: {exc.__class__.__name__}: {exc}"
        print(json.dumps(out))
        return 0
    out.update(
        ex.answer(), me={"ip": me["ip"], "name": me["name"]}, waited_s=round(time.monotonic() - started, 3)
    )
    test = cfg.get("link_test")
    if test and not out["missing"] and not out["unseen"] and out["nodes"] > 1 and cfg["role"] == "driver":
        # The agreement first, on its own line: if the transfers overrun the deadline, the gate still has it.
        print(
            json.dumps({**out, "ray_link_test": {"error": "did not finish within the deadline"}}), flush=True
        )
        torch_ok = "torch" in digest and digest.get("torch") is not None
        test = {**test, "namespace": cfg["namespace"], "my_ip": me["ip"], "torch": torch_ok}
        out["ray_link_test"] = ray_link_test(ray, address, out["nodes"], test, deadline - 0.3, agent)
        with contextlib.suppress(Exception):
            ray.shutdown()
    out["seconds"] = round(time.monotonic() - started, 3)
    print(json.dumps(out))
    return 0


if __name__ == "__main__":
    code = main()
    sys.stdout.flush()
    os._exit(code)  # skip Ray's and torch's teardown: the answer is out

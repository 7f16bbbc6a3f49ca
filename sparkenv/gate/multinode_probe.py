"""The gate's multi-node probe: link facts from /sys, NCCL settings, and (for a multi-node launch) the
agreement with the peers through the job's TCPStore, run by store_agent.py under the workload's
interpreter. Everything under the gate's one deadline; the agent is killed with its process group."""

from __future__ import annotations

import json
import socket
import time
from collections.abc import Mapping
from typing import Any

from sparkenv.environment import digest, launch, nccl, sysfs
from sparkenv.knowledge import multinode
from sparkenv.multinode import agent_path

SYSFS_ROOT_ENV = "SPARKENV_SYSFS_ROOT"  # a recorded tree (tests, replaying a user's machine)


def resolve(hosts: list[str], timeout: float) -> dict[str, str | None]:
    """Host names the launch advertises -> IPv4 address (None when it does not resolve)."""
    out: dict[str, str | None] = {}
    old = socket.getdefaulttimeout()
    socket.setdefaulttimeout(max(0.2, timeout))
    try:
        for host in hosts:
            try:
                out[host] = socket.getaddrinfo(host, None, socket.AF_INET)[0][4][0]
            except OSError:
                out[host] = None
    finally:
        socket.setdefaulttimeout(old)
    return out


def store_port(plan: launch.Launch, env: Mapping[str, str]) -> int:
    data = multinode().agreement
    if env.get("SPARKENV_AGREE_PORT", "").isdigit():
        return int(env["SPARKENV_AGREE_PORT"])
    return (plan.master_port or data.default_master_port) + data.port_offset


def is_local(address: str, link: Mapping[str, Any]) -> bool:
    if address.startswith("127.") or address in ("localhost", "::1"):
        return True
    return any(address == a.split("/")[0] for n in link["net"].values() for a in n["addresses"])


def gather(
    workload: list[str],
    env: Mapping[str, str],
    configs: Mapping[str, Any],
    python: str,
    deadline: float,
    version: str,
    link_test: bool = False,
) -> dict[str, Any]:
    plan = launch.read(workload, env, configs)
    if not plan.multi_node and plan.ray_role != "driver":
        return {"multi_node": False}
    if not plan.multi_node:
        # A Ray workload spans the cluster's nodes, whatever the launch names: ask the cluster first.
        from sparkenv.gate import ray_probe

        settings = nccl.effective(
            {k: v for k, v in env.items() if k.startswith("NCCL_")}, nccl.read_confs(env)
        )
        agreement = ray_probe.agree(plan, env, settings, python, deadline, version, link_test)
        if int(agreement.get("nodes") or 1) <= 1:
            return {"multi_node": False, "agreement": agreement}
        out = gather_link(plan, env, deadline)
        out["agreement"] = agreement
        return out
    out = gather_link(plan, env, deadline)
    settings = nccl.effective(out["nccl_env"], out["nccl_confs"])
    out["agreement"] = _agree(
        plan, env, settings, python, deadline, version, out["link"], out["resolved"], link_test
    )
    return out


def gather_link(plan: launch.Launch, env: Mapping[str, str], deadline: float) -> dict[str, Any]:
    """This node's link facts and NCCL settings."""
    confs = nccl.read_confs(env)
    link = sysfs.read_link(env.get(SYSFS_ROOT_ENV) or "/")
    hosts = sorted({s.value for s in plan.advertised})
    out: dict[str, Any] = {
        "multi_node": True,
        "link": link,
        "nccl_env": {k: v for k, v in env.items() if k.startswith("NCCL_")},
        "nccl_confs": confs,
        "resolved": resolve(hosts, min(2.0, deadline - time.monotonic() - 1.0)),
    }
    return out


def _agree(
    plan: launch.Launch,
    env: Mapping[str, str],
    settings: Mapping[str, tuple[str, str]],
    python: str,
    deadline: float,
    version: str,
    link: Mapping[str, Any],
    resolved: Mapping[str, str | None],
    link_test: bool,
) -> dict[str, Any]:
    if plan.local_rank not in (None, 0):
        return {"skipped": f"local rank {plan.local_rank}: the node's local rank 0 compares for this node"}
    if plan.ray:
        from sparkenv.gate import ray_probe

        return ray_probe.agree(plan, env, settings, python, deadline, version, link_test)
    if plan.master_addr is None:
        return {"error": "no master address (--master-addr, MASTER_ADDR, --rdzv-endpoint, main_process_ip)"}
    host = plan.master_addr.value
    address = resolved.get(host) or host
    is_master = plan.node_rank == 0 if plan.node_rank is not None else is_local(address, link)
    mine = digest.own(env, settings, version)
    cfg = _store_config(plan, env, address, is_master, mine, deadline, link_test)
    from sparkenv.gate import orchestrate

    started = time.monotonic()
    try:
        # The gate's own runner: its own session, killed at the deadline and on any signal the gate gets.
        ran = orchestrate.bounded_run(
            [python, "-X", "utf8", agent_path("store_agent.py"), json.dumps(cfg)], deadline - 0.3
        )
    except OSError as exc:
        return {"error": f"cannot run {python}: {exc.strerror}", "me": mine}
    if ran["timed_out"]:
        return {
            "error": f"the store exchange at {address}:{cfg['port']} did not finish within the deadline",
            "me": mine,
        }
    result = _last_json_line(ran["stdout"])
    if not result:
        tail = [ln for ln in ran["stderr"].splitlines() if ln.strip()][-1:] or [f"exit {ran['returncode']}"]
        return {"error": f"the store agent gave no answer: {tail[0]}", "me": mine}
    result["agent_s"] = round(time.monotonic() - started, 3)
    result["nodes"] = plan.nodes
    return result


def _store_config(
    plan: launch.Launch,
    env: Mapping[str, str],
    address: str,
    is_master: bool,
    mine: dict[str, Any],
    deadline: float,
    link_test: bool,
) -> dict[str, Any]:
    """What the store agent is told: where the store is, who hosts it, this node's digest, the link test."""
    cfg: dict[str, Any] = {
        "host": address,
        "port": store_port(plan, env),
        "is_master": is_master,
        "nodes": plan.nodes,
        "node_rank": plan.node_rank,
        "timeout_s": max(0.5, deadline - time.monotonic() - 1.0),
        "deadline_monotonic": deadline - 0.8,  # it answers before we kill it
        "digest": mine,
        "link_test": None,
    }
    if link_test:
        test = multinode().link_test
        cfg["link_test"] = {
            "buffer_mib": test.buffer_mib,
            "max_iterations": test.max_iterations,
            "budget_s": cfg["timeout_s"],
            # auto: NCCL where CUDA is available, else gloo; `gloo` measures the socket path on GPU nodes
            "backend": env.get("SPARKENV_LINK_BACKEND") or None,
        }
    return cfg


def _last_json_line(stdout: str) -> dict[str, Any]:
    """The agent's answer: its last line that is JSON (whatever the workload's imports printed before)."""
    for line in reversed(stdout.splitlines()):
        try:
            return json.loads(line)
        except ValueError:
            continue
    return {}

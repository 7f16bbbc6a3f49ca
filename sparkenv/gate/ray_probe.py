"""Agreement of the nodes through a Ray cluster's internal key-value store: the gate's side.
multinode/ray_agent.py does the exchange in the workload's interpreter (Ray is never imported into the
gate); this module says what to ask and runs it under the gate's deadline, killed with its process group
on any signal."""

from __future__ import annotations

import json
import time
from collections.abc import Mapping
from typing import Any

from sparkenv.environment import digest, launch
from sparkenv.knowledge import multinode
from sparkenv.multinode import agent_path


def config(
    plan: launch.Launch,
    env: Mapping[str, str],
    settings: Mapping[str, tuple[str, str]],
    deadline: float,
    version: str,
    link_test: bool,
) -> dict[str, Any]:
    data = multinode()
    cfg: dict[str, Any] = {
        "address": plan.ray_address.value if plan.ray_address else None,
        "role": plan.ray_role,
        "node_ip": next((s.value for s in plan.advertised if "node-ip-address" in s.source), None)
        or env.get("VLLM_HOST_IP")
        or None,
        "nodes": plan.nodes,
        "gpus_needed": plan.tp * plan.pp,
        "namespace": data.ray.namespace,
        "prefix": data.ray.key_prefix,
        "deadline_monotonic": deadline - 0.8,  # it answers before the gate kills it
        "digest": digest.own(env, settings, version),
        "link_test": None,
    }
    if link_test:
        test = data.link_test
        cfg["link_test"] = {
            "buffer_mib": test.buffer_mib,
            "max_iterations": test.max_iterations,
            "backend": env.get("SPARKENV_LINK_BACKEND") or None,
        }
    return cfg


def agree(
    plan: launch.Launch,
    env: Mapping[str, str],
    settings: Mapping[str, tuple[str, str]],
    python: str,
    deadline: float,
    version: str,
    link_test: bool,
) -> dict[str, Any]:
    if plan.ray_role == "head":
        return {
            "skipped": "this node starts the Ray cluster (`ray start --head`): the gates in front of the "
            "joining nodes (`ray start --address`) and of the workload compare through its key-value store"
        }
    if plan.ray_role == "client":
        return {
            "skipped": "`ray job submit` runs the job on the cluster's nodes: the gates in front of their "
            "`ray start --address` and of the driver compare"
        }
    cfg = config(plan, env, settings, deadline, version, link_test)
    from sparkenv.gate import orchestrate

    started = time.monotonic()
    try:
        ran = orchestrate.bounded_run(
            [python, "-X", "utf8", agent_path("ray_agent.py"), json.dumps(cfg)], deadline - 0.3
        )
    except OSError as exc:
        return {"error": f"cannot run {python}: {exc.strerror}"}
    where = cfg["address"] or "RAY_ADDRESS=auto"
    result: dict[str, Any] = {}
    for line in reversed(ran["stdout"].splitlines()):
        try:
            result = json.loads(line)
            break
        except ValueError:
            continue
    if not result and ran["timed_out"]:
        return {
            "error": f"the exchange through the Ray cluster at {where} did not finish within the deadline"
        }
    if not result:
        tail = [ln for ln in ran["stderr"].splitlines() if ln.strip()][-1:] or [f"exit {ran['returncode']}"]
        return {"error": f"the Ray agent gave no answer: {tail[0]}"}
    result["agent_s"] = round(time.monotonic() - started, 3)
    return result

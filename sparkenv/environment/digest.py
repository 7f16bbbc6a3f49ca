"""What a node's gate publishes to its peers (the half it knows without torch; store_agent.py adds
torch, CUDA, NCCL, Python and the GPU), and the comparison of every node's digest with node 0's."""

from __future__ import annotations

import hashlib
import platform
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from sparkenv.core import safe_read
from sparkenv.environment import host_driver
from sparkenv.knowledge import multinode

IMAGE_LOCK = "/opt/sparkenv/pylock.toml"  # where `sparkenv build` puts the image's lock


def lock_hash(env: Mapping[str, str]) -> str | None:
    """sha256 of the lock this environment was built from: $SPARKENV_LOCK, else the image's own lock.
    The same value `sparkenv build` writes into the io.sparkenv.lock-hash label."""

    path = env.get("SPARKENV_LOCK") or IMAGE_LOCK
    try:
        # through safe_read: $SPARKENV_LOCK naming a FIFO or /dev/zero must not hang or fill the gate
        data = safe_read.read_bytes(path, what="a lock", limit=64 << 20)
    except safe_read.UnreadableFile:
        return None
    return "sha256:" + hashlib.sha256(data).hexdigest()


def own(env: Mapping[str, str], nccl_settings: Mapping[str, tuple[str, str]], version: str) -> dict[str, Any]:
    keys = multinode().agreement.nccl_settings
    return {
        "sparkenv": version,
        # The image's digest is not visible from inside a container: the two-node recipe passes it
        # (`-e SPARKENV_IMAGE=REGISTRY/NAME@sha256:…`, the digest `sparkenv build --push` printed).
        "image": env.get("SPARKENV_IMAGE") or None,
        "lock": lock_hash(env),
        "driver": host_driver.version(),
        "machine": platform.machine(),
        "nccl_settings": {k: nccl_settings[k][0] for k in keys if k in nccl_settings},
    }


@dataclass(frozen=True)
class Difference:
    node: str  # "node 1 (spark-b)"
    field: str  # "lock", "NCCL_IB_HCA"
    mine: Any  # node 0's value
    theirs: Any


def label(peer: Mapping[str, Any]) -> str:
    return f"node {peer.get('ordinal')} ({peer.get('name', '?')})"


def _flat(digest: Mapping[str, Any]) -> dict[str, Any]:
    fields = multinode().agreement.fields
    flat = {f: digest.get(f) for f in fields}
    for key in multinode().agreement.nccl_settings:
        flat[key] = (digest.get("nccl_settings") or {}).get(key)
    return flat


def compare(peers: Mapping[str, Mapping[str, Any]]) -> list[Difference]:
    """Every node against the lowest-numbered one: the same list on every node."""
    if not peers:
        return []
    order = sorted(peers, key=lambda k: int(k))
    ref = _flat(peers[order[0]].get("digest") or {})
    out = []
    for key in order[1:]:
        theirs = _flat(peers[key].get("digest") or {})
        for name, value in ref.items():
            if theirs.get(name) != value:
                out.append(Difference(label(peers[key]), name, value, theirs.get(name)))
    return out

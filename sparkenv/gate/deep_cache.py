"""A passed `--deep` probe, remembered per (image, driver, GPU) on a folder the user names
(`--deep-cache DIR`, `$SPARKENV_GATE_DEEP_CACHE`: a volume shared by a fleet), so each combination pays
torch's import and first CUDA operation once.

Inside a container the image's ID is not visible, so the image is identified by what the deep probe
depends on: the interpreter, torch as the static probe read it (version, library, the CUDA libraries the
loader resolves) and every installed distribution's version. A changed package, driver or GPU is a new
key. Only a clean pass is stored (first CUDA operation ran, flash-attn not failing, no error stage);
an unreadable or foreign record counts as a miss.
"""

from __future__ import annotations

import hashlib
import json
import os
from typing import Any

from sparkenv.environment.reading import UnreadableFile, read_bytes

SCHEMA = "sparkenv.deep-cache/1"
ENV = "SPARKENV_GATE_DEEP_CACHE"


def key(facts: dict[str, Any]) -> str | None:
    """The (image, driver, GPU) key, or None when one of the three is unknown (then nothing is cached)."""
    gpu = facts.get("gpu") or {}
    gpus = gpu.get("gpus") or []
    uuid = gpus[0].get("uuid") if gpus else None
    driver = gpu.get("driver_version") or (facts.get("driver") or {}).get("version")
    torch = facts.get("torch_static") or {}
    if not (uuid and driver and torch.get("found")):
        return None
    image = {
        "python": (facts.get("host") or {}).get("python"),
        "torch": {k: torch.get(k) for k in ("package_dir", "version", "cuda", "library", "needed")},
        "dists": facts.get("dists") or {},
    }
    blob = json.dumps({"image": image, "driver": driver, "gpu": uuid}, sort_keys=True).encode()
    return hashlib.sha256(blob).hexdigest()[:32]


def passed(torch: dict[str, Any]) -> bool:
    stages = torch.get("stages") or {}
    if torch.get("timed_out") or torch.get("returncode") != 0 or "first_op" not in stages:
        return False
    if any(name.endswith("_error") for name in stages):
        return False
    flash = stages.get("flash") or {}
    return not (flash.get("importable") and not flash.get("works"))


def load(folder: str, k: str) -> dict[str, Any] | None:
    try:
        record = json.loads(
            read_bytes(os.path.join(folder, f"{k}.json"), what="a deep-probe record", limit=1 << 20)
        )
    except (UnreadableFile, ValueError, RecursionError):
        return None
    if not isinstance(record, dict) or record.get("schema") != SCHEMA or record.get("key") != k:
        return None
    torch = record.get("torch")
    return record if isinstance(torch, dict) and passed(torch) else None


def store(folder: str, k: str, torch: dict[str, Any], taken_at: str) -> str | None:
    """Write the record whole or not at all; the reason when it could not be written."""
    from sparkenv.core.errors import SparkenvError
    from sparkenv.render.emit import write_atomic

    try:
        os.makedirs(folder, exist_ok=True)
        write_atomic(
            os.path.join(folder, f"{k}.json"),
            json.dumps({"schema": SCHEMA, "key": k, "taken_at": taken_at, "torch": torch}, indent=1) + "\n",
        )
    except (OSError, SparkenvError) as exc:
        return str(exc)
    return None

"""The one writer of locks (`sparkenv lock`): the PEP 751 pylock, and the hashed requirements rendered
from the lock as read.py reads it back, so the two files cannot disagree. The build's per-stage files
come from the same renderer."""

from __future__ import annotations

import json
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

# `sparkenv lock` names its files (paths_for) before uv starts: nothing more is imported then
if TYPE_CHECKING:
    from sparkenv.environment.profiles import Profile
    from sparkenv.facts.lock import Lock, LockStage


def profile_hash(profile: Profile) -> str:
    """What of a profile a lock depends on: a change here makes the lock stale (`lock --check`)."""
    import hashlib

    keys = ("name", "image", "digest", "python", "cuda", "manylinux", "platform", "provides", "satisfies")
    data = {k: getattr(profile, k) for k in keys}
    return "sha256:" + hashlib.sha256(json.dumps(data, sort_keys=True).encode()).hexdigest()


def paths_for(out_dir: Path, profile: Profile) -> tuple[Path, Path]:
    return out_dir / f"pylock.{profile.file_stem}.toml", out_dir / f"requirements.{profile.file_stem}.txt"


# ---- a TOML writer for the subset a lock uses ------------------------------------------------------


def _value(v: Any) -> str:
    if isinstance(v, bool):
        return "true" if v else "false"
    if isinstance(v, int):
        return str(v)
    if isinstance(v, str):
        return json.dumps(v, ensure_ascii=False)
    if isinstance(v, list):
        return "[" + ", ".join(_value(x) for x in v) + "]"
    if isinstance(v, dict):
        return "{ " + ", ".join(f"{_key(k)} = {_value(x)}" for k, x in v.items()) + " }"
    import datetime as dt  # upload times: imported by tomllib, which read them

    if isinstance(v, (dt.datetime, dt.date)):
        return v.isoformat()
    raise TypeError(f"cannot write {type(v).__name__} to TOML")


def _key(k: str) -> str:
    return k if k.replace("-", "").replace("_", "").isalnum() else json.dumps(k)


def _table(data: dict[str, Any]) -> list[str]:
    return [f"{_key(k)} = {_value(v)}" for k, v in data.items()]


def render_pylock(
    packages: list[dict[str, Any]], tool: dict[str, Any], requires_python: str, env: str
) -> str:
    lines = [
        'lock-version = "1.0"',
        f"environments = [{_value(env)}]",
        f"requires-python = {_value(requires_python)}",
        'created-by = "sparkenv"',
        "",
    ]
    if not packages:
        lines += ["packages = []", ""]  # nothing beyond the base: still a valid PEP 751 lock
    for pkg in packages:
        lines.append("[[packages]]")
        lines += _table(pkg)
        lines.append("")
    lines.append("[tool.sparkenv]")
    lines += _table(tool)
    return "\n".join(lines) + "\n"


# ---- hashed requirements ---------------------------------------------------------------------------


def render_requirements(lock: Lock, header: Sequence[str]) -> str:
    """One hashed requirements file in install order; every line installs with --no-deps."""
    lines = ["# sparkenv: no-deps", *[f"# {h}" for h in header], *lock.index_lines()]
    for stage in lock.stages:
        if not stage.packages:
            continue
        lines.append("")
        lines.append(_stage_line(stage))
        lines += [p.requirement() for p in stage.packages]
    return "\n".join(lines) + "\n"


def stage_requirements(lock: Lock, stage: LockStage) -> str:
    """One stage alone (the build installs stage by stage), with the lock's index options."""
    lines = [*lock.index_lines(), f"# stage {stage.name}", *(p.requirement() for p in stage.packages)]
    return "\n".join([*lines, ""])


def _stage_line(stage: LockStage) -> str:
    after = " (its own pip install --no-deps, after the stages above)" if stage.no_deps else ""
    return f"# stage {stage.name}{after}"


def write_pair(files: dict[Path, str]) -> None:
    """All files or none, through the one all-or-nothing writer (sparkenv.core.outputs); the lock folder is
    made when missing."""
    from sparkenv.core import outputs

    outputs.write_all(files, make_parents=True)

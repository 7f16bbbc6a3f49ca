"""Write a PEP 751 pylock.<profile>.toml and the hashed requirements file beside it; read them back."""

from __future__ import annotations

import datetime as dt
import hashlib
import json
from pathlib import Path
from typing import Any

from sparkenv.errors import SparkenvError
from sparkenv.profiles import Profile

FORMAT = 1


def profile_hash(profile: Profile) -> str:
    data = {
        k: getattr(profile, k)
        for k in (
            "name",
            "image",
            "digest",
            "python",
            "cuda",
            "manylinux",
            "platform",
            "provides",
            "satisfies",
        )
    }
    return "sha256:" + hashlib.sha256(json.dumps(data, sort_keys=True).encode()).hexdigest()


def paths_for(out_dir: Path, profile: Profile) -> tuple[Path, Path]:
    return out_dir / f"pylock.{profile.file_stem}.toml", out_dir / f"requirements.{profile.file_stem}.txt"


# ---- a TOML writer for the subset a lock uses ------------------------------------------------------


def _value(v: Any) -> str:
    if isinstance(v, bool):
        return "true" if v else "false"
    if isinstance(v, int):
        return str(v)
    if isinstance(v, (dt.datetime, dt.date)):
        return v.isoformat()
    if isinstance(v, str):
        return json.dumps(v, ensure_ascii=False)
    if isinstance(v, list):
        return "[" + ", ".join(_value(x) for x in v) + "]"
    if isinstance(v, dict):
        return "{ " + ", ".join(f"{_key(k)} = {_value(x)}" for k, x in v.items()) + " }"
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


def render_requirements(
    packages: list[dict[str, Any]], stages: list[tuple[str, bool]], header: list[str], index_lines: list[str]
) -> str:
    """One hashed requirements file in install order; every line installs with --no-deps."""
    lines = ["# sparkenv: no-deps", *[f"# {h}" for h in header], *index_lines]
    for stage, no_deps in stages:
        members = [p for p in packages if p["tool"]["sparkenv"]["stage"] == stage]
        if not members:
            continue
        lines.append("")
        lines.append(
            f"# stage {stage}"
            + (" (its own pip install --no-deps, after the stages above)" if no_deps else "")
        )
        for p in members:
            hashes = [w["hashes"]["sha256"] for w in p.get("wheels", [])]
            if "sdist" in p:
                hashes.append(p["sdist"]["hashes"]["sha256"])
            marker = f" ; {p['marker']}" if p.get("marker") else ""
            body = [f"{p['name']}=={p['version']}{marker}"] + [f"    --hash=sha256:{h}" for h in hashes]
            lines.append(" \\\n".join(body))
    return "\n".join(lines) + "\n"


def write_pair(files: dict[Path, str]) -> None:
    """All files or none, through the one all-or-nothing writer (sparkenv.outputs); the lock folder is
    made when missing."""
    from sparkenv import outputs

    outputs.write_all(files, make_parents=True)


def read_tool(path: Path) -> dict[str, Any]:
    """The [tool.sparkenv] table of a lock sparkenv wrote (validated as PEP 751 first)."""
    from packaging.pylock import Pylock, PylockValidationError

    from sparkenv.datafiles import read_user_toml

    data = read_user_toml(path, "a pylock.toml lock")
    try:
        Pylock.from_dict(data)
    except PylockValidationError as exc:
        raise SparkenvError(f"{path}: not a valid PEP 751 lock: {exc}") from None
    tool = data.get("tool", {}).get("sparkenv")
    if not isinstance(tool, dict):
        raise SparkenvError(f"{path}: no [tool.sparkenv] table: not written by sparkenv lock")
    return tool

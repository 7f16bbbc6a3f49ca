"""uv's resolution as the lock's packages: the one reader of the pylock.toml text `uv pip compile` writes.

Each package keeps uv's entry (files, hashes, URLs) as it will be written, with its version filled in
from its files when uv leaves it out, and the install stage it belongs to.
"""

from __future__ import annotations

from typing import Any

from packaging.utils import canonicalize_name, parse_sdist_filename, parse_wheel_filename

from sparkenv.facts.resolved import Locked


def packages(
    text: str, late: set[str], main_stage: str, late_stage: str
) -> tuple[dict[str, Locked], dict[str, dict[str, Any]]]:
    """(key -> Locked, key -> uv's entry with version and stage). `late`: the names that install in the
    --no-deps stage even where only a dependency brought them in (unsloth → unsloth-zoo)."""
    from sparkenv.core.datafiles import parse_toml

    locked: dict[str, Locked] = {}
    raw: dict[str, dict[str, Any]] = {}
    for pkg in parse_toml(text).get("packages", []):
        key = canonicalize_name(pkg["name"])
        stage = late_stage if key in late else main_stage
        wheels = [w["url"].rsplit("/", 1)[-1] for w in pkg.get("wheels", [])]
        sdist = pkg["sdist"]["url"].rsplit("/", 1)[-1] if "sdist" in pkg else None
        version = str(pkg.get("version") or file_version(wheels, sdist))
        locked[key] = Locked(key, version, stage, wheels, sdist)
        entry = dict(pkg)
        entry["version"] = version
        entry["tool"] = {"sparkenv": {"stage": stage}}
        raw[key] = entry
    return locked, raw


def file_version(wheels: list[str], sdist: str | None) -> str:
    if wheels:
        return str(parse_wheel_filename(wheels[0])[1])
    if sdist:
        return str(parse_sdist_filename(sdist)[1])
    return ""

"""The lock's two files, composed from uv's resolution: pylock.<profile>.toml with sparkenv's [tool.sparkenv]
table, and the hashed requirements file read back from it."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

from sparkenv.core.redact import redact
from sparkenv.environment import profiles
from sparkenv.facts.lock import FORMAT
from sparkenv.lock import inputs as inputs_mod
from sparkenv.lock import profile as lockprofile
from sparkenv.lock import read as lockread
from sparkenv.lock import write as lockwrite
from sparkenv.lock.uvdriver import IndexOptions, Stage


def relative(path: Path, out_dir: Path) -> str:
    return os.path.relpath(path.resolve(), out_dir.resolve())


def render(
    pylock_path: Path,
    req_path: Path,
    profile: profiles.Profile,
    inp: inputs_mod.Inputs,
    index: IndexOptions,
    stages: list[Stage],
    raw: dict[str, dict[str, Any]],
    paths: list[str],
    excluded: list[str],
    extra_tool: dict[str, Any],
) -> dict[Path, str]:
    out_dir = pylock_path.parent
    order = {s.name: i for i, s in enumerate(stages)}
    packages = sorted(raw.values(), key=lambda p: (order[p["tool"]["sparkenv"]["stage"]], p["name"]))
    tool: dict[str, Any] = {
        "format": FORMAT,
        **lockprofile.recorded(profile, out_dir),
        "image": profile.image,
        "digest": profile.digest,
        "platform": profile.platform,
        "python-platform": profile.python_platform,
        "inputs": [relative(Path(p), out_dir) for p in paths],
        "input-hash": inp.digest(),
        "requirements-hash": inp.requirements_digest(),
        "excluded": excluded,
        **extra_tool,
        "stages": [s.name for s in stages],
        "no-deps-stages": [s.name for s in stages if s.no_deps],
        "requirements": req_path.name,
    }
    # recorded without user-info: an install finds the credential where pip and uv read it (netrc, env)
    if index.index_url:
        tool["index-url"] = redact(index.index_url)
    if index.extra_index_urls:
        tool["extra-index-urls"] = [redact(u) for u in index.extra_index_urls]
    env = f"sys_platform == 'linux' and platform_machine == '{profile.machine}'"
    text = lockwrite.render_pylock(packages, tool, f"=={profile.python_minor}.*", env)
    written = lockread.from_text(text, pylock_path)  # read back as every reader will: the requirements follow
    base = f"{profile.image}@{profile.digest}" if profile.digest else (profile.image or "no base image")
    header = [
        f"Written by `sparkenv lock` for profile {profile.name} ({base}), {profile.python_platform}, "
        f"Python {profile.python_minor}.",
        f"input-hash: {tool['input-hash']}  inputs: {', '.join(tool['inputs'])}",
        "Every dependency is pinned here; what the base provides is left alone: "
        + (", ".join(excluded) or "nothing"),
        f"Install: pip install --no-deps --require-hashes -r {req_path.name}",
        "(or one stage at a time, in order, each with --no-deps)",
    ]
    req_text = lockwrite.render_requirements(written, header)
    return {pylock_path: text, req_path: req_text}

"""Paths named *inside* files stay inside the project those files belong to.

An include or constraint (`-r`, `-c`, every spelling) inside any requirements file, a lock's inputs, its
hashed requirements and its profile file: each must resolve inside the project (`project_root`, the one
definition: the git top-level, else the nearest pyproject.toml's folder, else the input's own folder),
or inside a folder the user allowed (`--allow-outside PATH`, `[tool.sparkenv] allow-outside = [...]`, for
monorepos), and never under /proc, /sys or /dev, whatever is allowed: `-r /proc/self/environ` made a
lock print the environment through uv's parse error.

A lock committed in someone else's repository names its inputs (`inputs = ["../req.txt"]`), its hashed
requirements (`requirements = "requirements.x.txt"`) and its profile. `sparkenv lock --check` and
`sparkenv build` read them; without a fence `inputs = ["../../../../etc/shadow"]` made sparkenv read that
file and print its first line in the error. Every such path is resolved (symlinks included) and must lie
inside the project folder, else exit 2 naming the entry — before the file is opened, so no byte of an
outside file is ever read, let alone printed. Paths the user types on the command line are the user's
own choice and are not fenced.
"""

from __future__ import annotations

import os
from pathlib import Path

from sparkenv.core.errors import SparkenvError
from sparkenv.core.printable import printable

# Kernel file systems: no requirements file, profile or lock lives there, whatever --allow-outside says
_NEVER = (Path("/proc"), Path("/sys"), Path("/dev"))

# Folders outside the project the user allowed on the command line (--allow-outside), for this process
_ALLOWED: list[Path] = []


def project_root(start: Path, fallback: Path | None = None) -> Path:
    """The project a file in `start` belongs to: the git top-level (the nearest folder holding .git),
    else the nearest folder holding a pyproject.toml, else `fallback` (a lock's folder's parent: lockfiles/
    sits in the project), else `start` itself."""
    here = Path(os.path.realpath(start))
    for marker in (".git", "pyproject.toml"):
        for folder in (here, *here.parents):
            if os.path.lexists(folder / marker):
                return folder
    return Path(os.path.realpath(fallback)) if fallback is not None else here


def allow_outside(paths: list[str] | None) -> None:
    """The folders `--allow-outside` names, for every fence of this process."""
    for p in paths or ():
        _ALLOWED.append(Path(os.path.realpath(p)))


def _within(real: Path, folder: Path) -> bool:
    return real == folder or folder in real.parents


def _settings_allowed(root: Path, relative_to: Path) -> list[Path]:
    """`[tool.sparkenv] allow-outside` of the nearest pyproject.toml from `relative_to` up to `root`:
    folders relative to that pyproject's folder."""
    from sparkenv.core.datafiles import read_user_toml

    here = Path(os.path.realpath(relative_to))
    for folder in (here, *here.parents):
        pyproject = folder / "pyproject.toml"
        if pyproject.is_file():
            settings = read_user_toml(pyproject, "a pyproject.toml").get("tool", {}).get("sparkenv", {})
            listed = settings.get("allow-outside", []) if isinstance(settings, dict) else []
            if not isinstance(listed, list) or not all(isinstance(x, str) for x in listed):
                raise SparkenvError(f"{pyproject}: [tool.sparkenv] allow-outside must be an array of strings")
            return [Path(os.path.realpath(folder / x)) for x in listed]
        if folder == root or folder == folder.parent:
            break
    return []


def inside(root: Path, entry: str, relative_to: Path, where: str) -> Path:
    """`relative_to / entry`, when it resolves inside `root` or a folder the user allowed outside it, and
    not under /proc, /sys or /dev; else SparkenvError naming `where` (the file and line or key that named
    it) and the entry. Nothing is opened."""
    if "\0" in entry:
        raise SparkenvError(f"{where}: {printable(entry)!r} is not a path")
    candidate = relative_to / entry
    real = Path(os.path.realpath(candidate))
    shown = printable(entry)[:200]
    for kernel in _NEVER:
        if _within(real, kernel):
            via = (
                ""
                if os.path.normpath(entry) == str(real)
                else f" resolves to {printable(str(real))[:200]}, which"
            )
            raise SparkenvError(
                f"{where}: {shown!r}{via} is under {kernel}, not a requirements file; sparkenv reads no "
                "file there"
            )
    real_root = Path(os.path.realpath(root))
    if _within(real, real_root) or any(_within(real, a) for a in _ALLOWED):
        return candidate
    if any(_within(real, a) for a in _settings_allowed(real_root, relative_to)):
        return candidate
    raise SparkenvError(
        f"{where}: {shown!r} points outside the project folder {printable(str(real_root))}; sparkenv reads "
        "no file an input names outside its project (--allow-outside PATH, or [tool.sparkenv] "
        "allow-outside, to allow a folder)"
    )


def plain_name(entry: str, where: str) -> str:
    """A bare file name (no folder part, not . or ..), for entries that name a file beside the lock."""
    if not entry or "/" in entry or "\\" in entry or entry in (".", "..") or "\0" in entry:
        raise SparkenvError(f"{where}: {printable(entry)!r} must be a file name beside the lock, no folder")
    return entry

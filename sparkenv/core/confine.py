"""Paths named *inside* files stay inside the project those files belong to.

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

# What marks a project's top folder, looked for from the lock's folder upwards.
_PROJECT_MARKERS = (".git", "pyproject.toml", ".hg", "setup.py", "setup.cfg")


def project_root(lock_folder: Path) -> Path:
    """The project a lock folder belongs to: the nearest folder at or above it holding a project marker
    (.git, pyproject.toml …); without one, the lock folder's parent (`lockfiles/` sits in the project)."""
    start = Path(os.path.realpath(lock_folder))
    for folder in (start, *start.parents):
        if any(os.path.lexists(folder / m) for m in _PROJECT_MARKERS):
            return folder
    return start.parent


def inside(root: Path, entry: str, relative_to: Path, where: str) -> Path:
    """`relative_to / entry`, when it resolves inside `root`; else SparkenvError naming `where` (the file
    and key that named it) and the entry. Nothing is opened."""
    if "\0" in entry:
        raise SparkenvError(f"{where}: {printable(entry)!r} is not a path")
    candidate = relative_to / entry
    real = Path(os.path.realpath(candidate))
    real_root = Path(os.path.realpath(root))
    if real != real_root and real_root not in real.parents:
        raise SparkenvError(
            f"{where}: {printable(entry)!r} points outside the project folder {printable(str(real_root))}; "
            "sparkenv reads no file a lock names outside its project (is this lock from another repository?)"
        )
    return candidate


def plain_name(entry: str, where: str) -> str:
    """A bare file name (no folder part, not . or ..), for entries that name a file beside the lock."""
    if not entry or "/" in entry or "\\" in entry or entry in (".", "..") or "\0" in entry:
        raise SparkenvError(f"{where}: {printable(entry)!r} must be a file name beside the lock, no folder")
    return entry

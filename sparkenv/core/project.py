"""The project a command works in, found as uv finds it: the nearest folder at or above the start holding
a pyproject.toml, else the git repository's top, else the start itself. Its `lockfiles/` is where locks go
unless --output-dir says otherwise, and a lock names its profile file relative to it, so every command
run anywhere inside the project finds the same files."""

from __future__ import annotations

import os
from pathlib import Path

LOCKFILES = "lockfiles"


def root(start: Path | None = None) -> Path:
    here = Path(os.path.realpath(start or Path.cwd()))
    for folder in (here, *here.parents):
        if (folder / "pyproject.toml").is_file():
            return folder
    for folder in (here, *here.parents):
        if os.path.lexists(folder / ".git"):
            return folder
    return here


def lock_folder(output_dir: str | None) -> Path:
    """--output-dir as given (relative to where the user stands), else the project root's lockfiles/."""
    return Path(output_dir) if output_dir else root() / LOCKFILES


def from_here(path: Path | str) -> str:
    """`path` as the user standing in the working folder types it: a printed command runs as printed."""
    return os.path.relpath(os.path.realpath(path), os.path.realpath(Path.cwd()))

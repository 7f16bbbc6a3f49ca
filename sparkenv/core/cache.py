"""Where sparkenv keeps what it can fetch or build again: $SPARKENV_CACHE_DIR, else $XDG_CACHE_HOME/sparkenv,
else ~/.cache/sparkenv. One place decides, and says clearly when that place cannot be used (an
XDG_CACHE_HOME that is a file ended in an internal error)."""

from __future__ import annotations

import os
from pathlib import Path

from sparkenv.core.errors import SparkenvError
from sparkenv.core.printable import printable


def root() -> Path:
    if os.environ.get("SPARKENV_CACHE_DIR"):
        return Path(os.environ["SPARKENV_CACHE_DIR"])
    base = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(base) / "sparkenv"


def _source() -> str:
    if os.environ.get("SPARKENV_CACHE_DIR"):
        return "$SPARKENV_CACHE_DIR"
    return "$XDG_CACHE_HOME" if os.environ.get("XDG_CACHE_HOME") else "~/.cache"


def folder(*parts: str) -> Path:
    """root()/parts…, created; SparkenvError (exit 2) naming the setting when it cannot be."""
    path = root().joinpath(*parts)
    try:
        path.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        blocker = next((p for p in (path, *path.parents) if _is_file(p)), None)
        why = f"{printable(str(blocker))} is a file, not a folder" if blocker else exc.strerror
        raise SparkenvError(
            f"cannot use the cache folder {printable(str(path))} ({_source()}): {why}; point "
            "SPARKENV_CACHE_DIR or XDG_CACHE_HOME at a writable folder"
        ) from None
    return path


def _is_file(path: Path) -> bool:
    """Something other than a folder is there; False when it cannot even be looked at (a parent
    folder of mode 700 owned by another user: the error is then the permission, said as such)."""
    try:
        return path.exists() and not path.is_dir()
    except OSError:
        return False

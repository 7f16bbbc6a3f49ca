"""Where sparkenv keeps what it can fetch or build again: $SPARKENV_CACHE_DIR, else $XDG_CACHE_HOME/sparkenv,
else ~/.cache/sparkenv (`sparkenv cache dir` prints it, `sparkenv cache clean` empties it). One place
decides, and says clearly when that place cannot be used (an XDG_CACHE_HOME that is a file ended in an
internal error)."""

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


TAG = "CACHEDIR.TAG"
# https://bford.info/cachedir/: backup tools skip the folder; `sparkenv cache clean` empties only a
# folder that holds this tag or is named sparkenv (a SPARKENV_CACHE_DIR pointed at $HOME is never emptied)
TAG_TEXT = (
    "Signature: 8a477f597d28d172789f06886806bc55\n"
    "# This file is a cache directory tag created by sparkenv (sparkenv cache dir|clean).\n"
)


def folder(*parts: str) -> Path:
    """root()/parts…, created (the root with its CACHEDIR.TAG); SparkenvError (exit 2) naming the setting
    when it cannot be."""
    path = root().joinpath(*parts)
    try:
        if not path.is_dir():
            path.mkdir(parents=True, exist_ok=True)
            tag = root() / TAG
            if not tag.exists():
                tag.write_text(TAG_TEXT, encoding="utf-8")
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


def owned(path: Path) -> bool:
    """Whether `path` is a cache folder sparkenv may empty: it holds sparkenv's CACHEDIR.TAG, or is the
    default folder's name (a cache made before the tag)."""
    try:
        return (path / TAG).read_text(encoding="utf-8", errors="replace").startswith(
            TAG_TEXT.splitlines()[0]
        ) or (path.name == "sparkenv")
    except OSError:
        return path.name == "sparkenv"

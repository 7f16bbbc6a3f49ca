"""Where the uv program is: the one the `uv` package installed beside sparkenv, else uv on PATH. A module of
its own so that modules below the uv driver (index/default_index.py) find uv without importing it."""

from __future__ import annotations

import shutil
from pathlib import Path


def uv_binary() -> str:
    try:
        import uv

        # a folder named uv on sys.path (python -m puts the working folder first) imports as a namespace
        # package when uv's own is not installed: it has no find_uv_bin, and uv on PATH is looked for
        find = getattr(uv, "find_uv_bin", None)
        path = find() if find is not None else None
        if path and Path(path).exists():
            return str(path)
    except (ImportError, FileNotFoundError):
        pass
    found = shutil.which("uv")
    if not found:
        from sparkenv.core.extras import missing

        raise missing("lock")
    return found

"""Where the uv program is: the one the `uv` package installed beside sparkenv, else uv on PATH. A module of
its own so that modules below the uv driver (index/default_index.py) find uv without importing it."""

from __future__ import annotations

import shutil
from pathlib import Path


def uv_binary() -> str:
    try:
        import uv

        path = uv.find_uv_bin()
        if path and Path(path).exists():
            return str(path)
    except (ImportError, FileNotFoundError):
        pass
    found = shutil.which("uv")
    if not found:
        from sparkenv.core.extras import missing

        raise missing("lock")
    return found

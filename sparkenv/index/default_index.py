"""The index sparkenv's own reads use when neither the inputs, `--index-url` nor uv's variables name one:
the default of the installers themselves, asked of them. sparkenv spells no registry of its own, so a
machine whose pip or uv is pointed elsewhere (a mirror, a proxy) is never sent anywhere else."""

from __future__ import annotations

import functools
import re
import subprocess

# uv's help states its default index as "(by default: <URL>)" for --default-index
_UV_DEFAULT = re.compile(r"--default-index <[^>]*>\s+[^<]*?\(by default: <(?P<url>[^>]+)>\)")


def _slash(url: str) -> str:
    return url.rstrip("/") + "/"


def _pip_default() -> str | None:
    try:
        from pip._internal.models.index import PyPI  # pip's own default index
    except Exception:  # pip absent (uv tool, pipx) or its internals moved: ask uv instead
        return None
    url = getattr(PyPI, "simple_url", None)
    return _slash(url) if isinstance(url, str) and url.startswith(("http://", "https://")) else None


def _uv_default() -> str | None:
    from sparkenv.core import children
    from sparkenv.core.errors import SparkenvError
    from sparkenv.index.uv_binary import uv_binary

    try:
        proc = children.spawn([uv_binary(), "pip", "compile", "--help"], text=True)
    except (OSError, SparkenvError):
        return None
    try:
        shown, _ = proc.communicate(timeout=10)
    except subprocess.TimeoutExpired:
        return None
    finally:
        children.stop(proc)
    found = _UV_DEFAULT.search(shown or "")
    return _slash(found["url"]) if found else None


@functools.lru_cache(maxsize=1)
def installers_default() -> str | None:
    """pip's default index (when pip is importable here), else the one uv's help states; None when neither
    says (sparkenv's own index reads are then skipped and said, never sent to a guessed host)."""
    return _pip_default() or _uv_default()


def is_installers_default(index_url: str | None) -> bool:
    """True when reads go to the installers' default index (no index configured, or that very URL):
    uv caches those pages under its `pypi` bucket."""
    if index_url is None:
        return True
    default = installers_default()
    return default is not None and _slash(index_url) == default

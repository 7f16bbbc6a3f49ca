"""Requires-Dist of the chosen wheels, read from the index's PEP 658 `.metadata` files.

Cached by the wheel's sha256 (content-addressed, never stale) under $SPARKENV_CACHE_DIR, else
$XDG_CACHE_HOME/sparkenv, else ~/.cache/sparkenv. A file the index does not serve is simply unknown.
"""

from __future__ import annotations

import os
import urllib.error
import urllib.request
from concurrent.futures import ThreadPoolExecutor
from email.parser import HeaderParser
from pathlib import Path

from packaging.requirements import InvalidRequirement, Requirement


def cache_dir() -> Path:
    if os.environ.get("SPARKENV_CACHE_DIR"):
        return Path(os.environ["SPARKENV_CACHE_DIR"]) / "metadata"
    base = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(base) / "sparkenv" / "metadata"


def _fetch(url: str, sha256: str, timeout: float) -> str | None:
    cached = cache_dir() / f"{sha256}.metadata"
    try:
        return cached.read_text(encoding="utf-8")
    except OSError:
        pass
    try:
        with urllib.request.urlopen(url + ".metadata", timeout=timeout) as resp:
            text = resp.read().decode("utf-8", errors="replace")
    except (urllib.error.URLError, OSError, ValueError):
        return None
    try:
        cached.parent.mkdir(parents=True, exist_ok=True)
        tmp = cached.with_name(f".{cached.name}.{os.getpid()}.tmp")
        tmp.write_text(text, encoding="utf-8")
        os.replace(tmp, cached)
    except OSError:
        pass
    return text


def requires(
    wheels: dict[str, tuple[str, str]], timeout: float = 20.0
) -> dict[str, list[Requirement] | None]:
    """name -> its Requires-Dist (None when unknown); `wheels` maps name -> (wheel url, sha256)."""
    if not wheels:
        return {}

    def one(item: tuple[str, tuple[str, str]]) -> tuple[str, list[Requirement] | None]:
        name, (url, sha) = item
        text = _fetch(url, sha, timeout)
        if text is None:
            return name, None
        out = []
        for value in HeaderParser().parsestr(text).get_all("Requires-Dist") or []:
            try:
                out.append(Requirement(value))
            except InvalidRequirement:
                continue
        return name, out

    with ThreadPoolExecutor(min(16, len(wheels))) as pool:
        return dict(pool.map(one, wheels.items()))

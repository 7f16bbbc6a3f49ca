"""Loading of the dated knowledge files shipped in sparkenv/data."""

from __future__ import annotations

import functools
import sys
from importlib import resources
from typing import Any

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover - exercised on Python 3.10 only
    import tomli as tomllib


@functools.cache
def load(name: str) -> dict[str, Any]:
    """Parse sparkenv/data/<name>.toml once per process."""
    text = resources.files("sparkenv").joinpath("data", f"{name}.toml").read_text(encoding="utf-8")
    return tomllib.loads(text)


def parse_toml(text: str) -> dict[str, Any]:
    return tomllib.loads(text)


TOMLDecodeError = tomllib.TOMLDecodeError

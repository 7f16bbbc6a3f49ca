"""Type checks for user-written TOML tables (profiles, pyproject `[tool.sparkenv]`): a wrong type is one
line naming the file and the key (exit 2), not an internal error deep inside a command.

The shapes are flat and few, so a small checker says exactly what a user needs ("provides.torch must be
a string, got an integer") without a schema library at start-up. Unknown keys are left alone: other
tools (and later sparkenv versions) share these tables.
"""

from __future__ import annotations

import datetime
import re
from collections.abc import Callable, Mapping
from typing import Any

from sparkenv.core.errors import SparkenvError

_BARE_KEY = re.compile(r"[A-Za-z0-9_-]+")

Check = Callable[[Any], bool]


def describe(value: Any) -> str:
    """A TOML value's type in TOML's own words."""
    if isinstance(value, bool):
        return "a boolean"
    if isinstance(value, int):
        return "an integer"
    if isinstance(value, float):
        return "a float"
    if isinstance(value, str):
        return "a string"
    if isinstance(value, list):
        return "an array"
    if isinstance(value, dict):
        return "a table"
    if isinstance(value, (datetime.date, datetime.time)):
        return "a date/time"
    return type(value).__name__


class Kind:
    def __init__(self, words: str, test: Check) -> None:
        self.words = words
        self.test = test


STRING = Kind("a string", lambda v: isinstance(v, str))
STRING_OR_DATE = Kind("a string or a date", lambda v: isinstance(v, (str, datetime.date)))
STRINGS = Kind("an array of strings", lambda v: isinstance(v, list) and all(isinstance(x, str) for x in v))
TABLE = Kind("a table", lambda v: isinstance(v, dict))
STRING_TABLE = Kind(
    "a table of strings", lambda v: isinstance(v, dict) and all(isinstance(x, str) for x in v.values())
)
TABLE_OF_STRINGS = Kind(
    "a table of arrays of strings",
    lambda v: isinstance(v, dict) and all(STRINGS.test(x) for x in v.values()),
)


def _first_bad(value: Any, kind: Kind) -> str:
    """Where inside a table or array the wrong value sits, for the message."""
    if isinstance(value, dict) and kind in (STRING_TABLE, TABLE_OF_STRINGS):
        inner = STRING if kind is STRING_TABLE else STRINGS
        for k, v in value.items():
            if not inner.test(v):
                return f".{key_text(str(k))} must be {inner.words}, got {describe(v)}"
    if isinstance(value, list) and kind is STRINGS:
        for i, v in enumerate(value):
            if not isinstance(v, str):
                return f"[{i}] must be a string, got {describe(v)}"
    return f" must be {kind.words}, got {describe(value)}"


def key_text(key: str) -> str:
    """A TOML key as an error line shows it: bare when TOML allows it bare, else quoted, its control
    characters and quotes escaped as JSON does, undecodable bytes as sparkenv.core.printable does (a key
    may hold a newline: the error stays one line)."""
    if _BARE_KEY.fullmatch(key):
        return key
    import json  # an error's path only

    from sparkenv.core.printable import printable

    return printable(json.dumps(key, ensure_ascii=False))


def check(data: Mapping[str, Any], spec: Mapping[str, Kind], where: str, prefix: str = "") -> None:
    """SparkenvError `"{where}: {prefix}{key} must be …, got …"` for the first key of `spec` in `data`
    whose value has the wrong type."""
    for key, kind in spec.items():
        if key in data and not kind.test(data[key]):
            raise SparkenvError(f"{where}: {prefix}{key}{_first_bad(data[key], kind)}")

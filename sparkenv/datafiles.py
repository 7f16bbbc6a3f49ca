"""Loading of the dated knowledge files shipped in sparkenv/data."""

from __future__ import annotations

import functools
import os
import sys
import threading
from collections.abc import Callable, Mapping
from typing import Any

# tomllib is imported where a file is parsed, not here: the gate (the image entrypoint) has its data
# files parsed by a forked child (parsed_elsewhere) and then never pays for the parser's import (its
# regular expressions are compiled at import: about as long as parsing every file the gate reads).


def _tomllib() -> Any:
    if sys.version_info >= (3, 11):
        import tomllib
    else:  # pragma: no cover - exercised on Python 3.10 only
        import tomli as tomllib
    return tomllib


_DATA = os.path.join(os.path.dirname(os.path.abspath(__file__)), "data")

_lock = threading.Lock()
_source: Callable[[], Mapping[str, dict[str, Any]] | None] | None = None
_given: dict[str, dict[str, Any]] = {}


def parsed_elsewhere(source: Callable[[], Mapping[str, dict[str, Any]] | None]) -> None:
    """Files parsed by another process from the same files, by the same `parse` (the gate's forked
    child, gate/early.py): `source()` is asked once, by the first `load`, and gives {name: data}, or
    None when it has no answer. A file it lacks, or any failure of it, is parsed here as before."""
    global _source
    with _lock:
        _source = source
        _given.clear()


def _from_elsewhere(name: str) -> dict[str, Any] | None:
    global _source
    with _lock:  # one caller asks; the others wait for its answer
        source, _source = _source, None
        if source is not None:
            try:
                _given.update(source() or {})
            except Exception:  # the child died or was late: parsed here, as if it had not run
                pass
        return _given.pop(name, None)


def parse(name: str) -> dict[str, Any]:
    """sparkenv/data/<name>.toml read and parsed, every time."""
    try:
        # A plain read: importlib.resources imports zipfile, tempfile and a dozen more modules, which
        # every gate start (the image entrypoint) would pay for.
        with open(os.path.join(_DATA, f"{name}.toml"), encoding="utf-8") as fh:
            text = fh.read()
    except FileNotFoundError:  # sparkenv imported from a zip archive: the data is only a resource there
        from importlib import resources

        text = resources.files("sparkenv").joinpath("data", f"{name}.toml").read_text(encoding="utf-8")
    return parse_toml(text)


@functools.cache
def load(name: str) -> dict[str, Any]:
    """Parse sparkenv/data/<name>.toml once per process (or take it from `parsed_elsewhere`)."""
    given = _from_elsewhere(name)
    return given if given is not None else parse(name)


def parse_toml(text: str) -> dict[str, Any]:
    return _tomllib().loads(text)  # type: ignore[no-any-return]


def read_user_toml(path: str | os.PathLike[str], what: str, limit: int = 16 << 20) -> dict[str, Any]:
    """A user-supplied TOML file (profile, pyproject, lock) read through the safe-read helper; every way
    it can be unreadable is an UnreadableFile (exit 2) naming the file."""
    from sparkenv.safe_read import UnreadableFile, read_text

    text = read_text(path, what=what, limit=limit)
    tomllib = _tomllib()
    try:
        return tomllib.loads(text)  # type: ignore[no-any-return]
    except tomllib.TOMLDecodeError as exc:
        raise UnreadableFile(path, f"not valid TOML: {exc}") from None
    except RecursionError:  # tomllib recurses per nesting level: 'a = [[[[…' thousands deep
        raise UnreadableFile(path, "not valid TOML: arrays or tables nested too deeply") from None


def __getattr__(name: str) -> Any:
    """`datafiles.TOMLDecodeError`, importing the parser only when a caller asks for it."""
    if name == "TOMLDecodeError":
        return _tomllib().TOMLDecodeError
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")

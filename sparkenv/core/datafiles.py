"""Loading of the dated knowledge files shipped in sparkenv/data, and the one decoder of TOML and JSON
that users and disk hand sparkenv (profiles, pyproject, waivers, locks, facts snapshots, watch records)."""

from __future__ import annotations

import functools
import os
from typing import Any

_DATA = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "data")


def parser() -> Any:
    """The TOML parser, imported where a file is parsed: its import (regular expressions compiled at
    import, about as long as parsing every file the gate reads) then comes after the gate forked its
    probes, not before, and not at all in a process that parses nothing.

    tomli, a dependency on every Python: its compiled (mypyc) wheels parse 2-3 times faster than the
    standard library's tomllib, the same parser in pure Python, as tomli's README says
    (https://github.com/hukkin/tomli#performance); a lock parses uv's pylock and reads its own back, tens
    of milliseconds on a large project. tomllib where tomli is missing (an install that left it out); a
    platform without a compiled wheel gets tomli's pure-Python one, as fast as tomllib."""
    try:
        import tomli
    except ImportError:  # pragma: no cover - tomli is a dependency
        import tomllib as tomli
    return tomli


@functools.cache
def load(name: str) -> dict[str, Any]:
    """Parse sparkenv/data/<name>.toml once per process."""
    try:
        # A plain read: importlib.resources imports zipfile, tempfile and a dozen more modules, which
        # every gate start (the image entrypoint) would pay for.
        with open(os.path.join(_DATA, f"{name}.toml"), encoding="utf-8") as fh:
            text = fh.read()
    except FileNotFoundError:  # sparkenv imported from a zip archive: the data is only a resource there
        from importlib import resources

        text = resources.files("sparkenv").joinpath("data", f"{name}.toml").read_text(encoding="utf-8")
    return parse_toml(text)


def parse_toml(text: str) -> dict[str, Any]:
    return parser().loads(text)  # type: ignore[no-any-return]


def read_user_toml(path: str | os.PathLike[str], what: str, limit: int = 16 << 20) -> dict[str, Any]:
    """A user-supplied TOML file (profile, pyproject, lock, waivers) read through the safe-read helper;
    every way it can be unreadable or undecodable is an UnreadableFile (exit 2) naming the file."""
    from sparkenv.core.safe_read import read_text

    return parse_user_toml(read_text(path, what=what, limit=limit), path)


def parse_user_toml(text: str, path: str | os.PathLike[str]) -> dict[str, Any]:
    """TOML text from a user or from disk, decoded; every way the decoder fails is an UnreadableFile
    (exit 2) naming `path`: invalid TOML, nesting deeper than the parser's recursion, and an integer
    longer than Python converts (4,300 digits by default: int() raises ValueError, not TOMLDecodeError)."""
    from sparkenv.core.safe_read import UnreadableFile

    tomllib = parser()
    try:
        return tomllib.loads(text)  # type: ignore[no-any-return]
    except tomllib.TOMLDecodeError as exc:
        raise UnreadableFile(path, f"not valid TOML: {_one_line(str(exc))}") from None
    except RecursionError:  # tomllib recurses per nesting level: 'a = [[[[…' thousands deep
        raise UnreadableFile(path, "not valid TOML: arrays or tables nested too deeply") from None
    except ValueError as exc:  # TOMLDecodeError is one too, caught above: what is left is int()'s limit
        raise UnreadableFile(path, f"not valid TOML: {_value_error(exc)}") from None


def parse_user_json(raw: bytes | str, path: str | os.PathLike[str], what: str) -> Any:
    """JSON from a user or from disk (a facts snapshot, a line of a watch record), decoded; every way
    the decoder fails is an UnreadableFile (exit 2) naming `path` and what was expected: bytes that are
    not UTF-8, nesting deeper than the decoder's recursion, an integer over int()'s digit limit, and
    anything else json refuses."""
    import json

    from sparkenv.core.safe_read import UnreadableFile

    try:
        text = raw.decode("utf-8") if isinstance(raw, bytes) else raw
    except UnicodeDecodeError as exc:
        raise UnreadableFile(path, f"not UTF-8 text (byte {exc.start}); expected {what}") from None
    try:
        return json.loads(text)
    except RecursionError:
        raise UnreadableFile(path, f"not {what}: JSON nested too deeply") from None
    except json.JSONDecodeError as exc:
        raise UnreadableFile(path, f"not JSON: {exc.msg} at line {exc.lineno}; expected {what}") from None
    except ValueError as exc:  # JSONDecodeError is one too, caught above: what is left is int()'s limit
        raise UnreadableFile(path, f"{_value_error(exc)}; expected {what}") from None


def _value_error(exc: ValueError) -> str:
    """A decoder's ValueError that is not a syntax error, in words a user can act on: the only one
    Python's int() raises on digits is its conversion limit (sys.get_int_max_str_digits)."""
    import sys

    limit = getattr(sys, "get_int_max_str_digits", lambda: 0)()
    if limit and "integer string conversion" in str(exc):
        return f"an integer with more than {limit} digits"
    return _one_line(str(exc))


def _one_line(text: str) -> str:
    """A decoder's message on one line, bounded: it may quote the input."""
    from sparkenv.core.printable import printable

    flat = " ".join(printable(text).split())
    return flat if len(flat) <= 200 else flat[:199] + "…"


def __getattr__(name: str) -> Any:
    """`datafiles.TOMLDecodeError`, the parser imported only when a caller asks for it."""
    if name == "TOMLDecodeError":
        return parser().TOMLDecodeError
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")

"""Loading of the dated knowledge files shipped in sparkenv/data."""

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
    """A user-supplied TOML file (profile, pyproject, lock) read through the safe-read helper; every way
    it can be unreadable is an UnreadableFile (exit 2) naming the file."""
    from sparkenv.core.safe_read import UnreadableFile, read_text

    text = read_text(path, what=what, limit=limit)
    tomllib = parser()
    try:
        return tomllib.loads(text)  # type: ignore[no-any-return]
    except tomllib.TOMLDecodeError as exc:
        raise UnreadableFile(path, f"not valid TOML: {exc}") from None
    except RecursionError:  # tomllib recurses per nesting level: 'a = [[[[…' thousands deep
        raise UnreadableFile(path, "not valid TOML: arrays or tables nested too deeply") from None


def __getattr__(name: str) -> Any:
    """`datafiles.TOMLDecodeError`, the parser imported only when a caller asks for it."""
    if name == "TOMLDecodeError":
        return parser().TOMLDecodeError
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")

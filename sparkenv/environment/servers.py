"""Which inference server an argv runs, if any (data: sparkenv/data/servers.toml)."""

from __future__ import annotations

import os
from typing import TYPE_CHECKING

from sparkenv.knowledge import servers as _data

if TYPE_CHECKING:
    from sparkenv.knowledge.records.servers import Server


def servers() -> tuple[Server, ...]:
    return _data().servers


def prefilter_words() -> tuple[str, ...]:
    """Cheap substrings for the /proc scan; `identify` decides."""
    words = []
    for s in servers():
        words += s.executables
        words += [m.split(".")[0] for m in s.modules]
    return tuple(dict.fromkeys(words))


def identify(argv: list[str]) -> Server | None:
    if not argv:
        return None
    exe = os.path.basename(argv[0])
    second = argv[1] if len(argv) > 1 else ""
    module = _python_module(argv) if exe.startswith("python") else None
    for s in servers():
        subs = s.subcommands
        if exe in s.executables and (not subs or second in subs):
            return s
        if module and any(f".{m}." in f".{module}." for m in s.modules):
            return s
    return None


def _python_module(argv: list[str]) -> str | None:
    """`python -m pkg.mod …` -> pkg.mod; `python …/pkg/mod.py …` -> pkg.mod (for matching)."""
    for i, arg in enumerate(argv[1:], start=1):
        if arg == "-m" and i + 1 < len(argv):
            return argv[i + 1]
        if arg.startswith("-m") and len(arg) > 2:
            return arg[2:]
        if arg == "-c":
            return None  # inline code: whatever it mentions, it is not a server's entry point
        if not arg.startswith("-"):
            return arg.removesuffix(".py").replace(os.sep, ".").lstrip(".")
    return None

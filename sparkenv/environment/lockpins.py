"""The versions a project's lock pins: a PEP 751 pylock.toml or a hashed requirements file."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from packaging.utils import canonicalize_name

from sparkenv import safe_read
from sparkenv.errors import SparkenvError
from sparkenv.rules.pins import exact_pin


@dataclass(frozen=True)
class LockPins:
    path: str
    pins: dict[str, str | None]  # normalized name -> exact version, None when listed but not pinned exactly


def read(path_arg: str) -> LockPins:
    path = Path(path_arg)
    safe_read.require_regular(path, what="a lock file")
    if path.name.startswith("pylock") and path.suffix == ".toml":
        return LockPins(path_arg, _pylock(path))
    return LockPins(path_arg, _requirements(path))


def _pylock(path: Path) -> dict[str, str | None]:
    from packaging.pylock import Pylock, PylockValidationError

    from sparkenv.datafiles import read_user_toml

    data = read_user_toml(path, "a pylock.toml lock")
    try:
        lock = Pylock.from_dict(data)
    except PylockValidationError as exc:
        raise SparkenvError(f"{path}: not a valid PEP 751 lock: {exc}") from None
    return {canonicalize_name(p.name): (str(p.version) if p.version else None) for p in lock.packages}


def _requirements(path: Path) -> dict[str, str | None]:
    from pip_requirements_parser import RequirementsFile

    from sparkenv.resolve.includes import prescan

    prescan(path, str(path))
    try:
        parsed = RequirementsFile.from_file(str(path), include_nested=True)
    except Exception as exc:  # the parser raises assorted types on unreadable files
        raise SparkenvError(f"{path}: unreadable requirements file: {exc}") from None
    if parsed.invalid_lines:
        bad = parsed.invalid_lines[0]
        raise SparkenvError(f"{bad.filename}:{bad.line_number}: {bad.error_message.splitlines()[0]}")
    pins: dict[str, str | None] = {}
    for req in parsed.requirements:
        if not req.name:
            continue
        pins[canonicalize_name(req.name)] = exact_pin(req.specifier)
    return pins

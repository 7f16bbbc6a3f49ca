"""Which lock a command means when it names none and no profile names one (`build`, `lock --check INPUT`):
the default profile's lock where it is, else the single lock present; several and none of them the
default's is an error that lists them, never a guess."""

from __future__ import annotations

from pathlib import Path

from sparkenv.core import project
from sparkenv.core.errors import SparkenvError


def present(folder: Path) -> list[Path]:
    """The pylock.*.toml locks in `folder`, sorted."""
    return sorted(p for p in folder.glob("pylock.*.toml") if p.is_file())


def default_lock(folder: Path, default_stem: str, must_exist: bool = True) -> Path:
    """The default profile's lock in `folder` when it is there, else the one lock present. Several others:
    SparkenvError (exit 2) listing them. None at all: the default's path when not `must_exist` (the caller
    says it is missing), else SparkenvError saying how to make one."""
    wanted = folder / f"pylock.{default_stem}.toml"
    if wanted.is_file():
        return wanted
    found = present(folder)
    if len(found) == 1:
        return found[0]
    shown = project.from_here(folder)
    if found:
        names = ", ".join(p.name for p in found)
        raise SparkenvError(
            f"{shown}: no {wanted.name} (the default profile's lock) and {len(found)} other locks: {names}; "
            "name one with --lock FILE or --profile NAME"
        )
    if not must_exist:
        return wanted
    raise SparkenvError(
        f"{shown}: no lock (pylock.*.toml) there: make one with `sparkenv lock INPUT…`, or name one with "
        "--lock FILE"
    )

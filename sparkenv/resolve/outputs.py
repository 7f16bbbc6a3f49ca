"""All of `sparkenv lock`'s outputs or none: the two lock files, --report, --junit and --sarif.

Every path is checked before the resolution starts (minutes can go into it), then all of them go
through sparkenv.core.outputs, the one all-or-nothing writer: temporaries beside each destination, moved into
place only when every one was written. A failing --report therefore leaves the previous lock untouched.
"""

from __future__ import annotations

from pathlib import Path

from sparkenv.core import outputs


def check_writable(paths: list[str]) -> None:
    outputs.check(paths)


def write_all(pending: dict[Path, str], report_files: list[tuple[str, str]]) -> None:
    """The lock files and the report's (sparkenv.render.emit.files): all or none."""
    files: list[tuple[str | Path, str]] = [*pending.items(), *report_files]
    if files:
        outputs.write_all(files, make_parents=True)  # the lock folder (lockfiles/) is made when missing

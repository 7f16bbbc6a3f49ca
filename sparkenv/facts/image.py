"""The facts base_check.py prints inside the image (one `sparkenv-base-check {json}` line in the build
log), read back and judged by the registry (rules/g9.py, Stage.IMAGE)."""

from __future__ import annotations

import json
from collections.abc import Iterable
from dataclasses import dataclass

MARK = "sparkenv-base-check "  # base_check.py's MARK: that script imports nothing of sparkenv


@dataclass(frozen=True)
class Change:
    name: str
    before: tuple[str, ...]
    after: tuple[str, ...]  # () when it was removed

    def describe(self) -> str:
        return f"{self.name} {'/'.join(self.before)} -> {'/'.join(self.after) or 'removed'}"


@dataclass(frozen=True)
class BaseCheck:
    provided: tuple[str, ...]  # what the profile says the base provides (less --allow-replace)
    replaced: tuple[Change, ...]  # provided distributions the lock's stages changed
    moved: tuple[Change, ...]  # other distributions of the base they changed


def parse(lines: Iterable[str]) -> BaseCheck | None:
    """The last facts line among `lines` (a step's log), or None when there is none or it is damaged."""
    found = None
    for line in lines:
        text = line.strip()
        if text.startswith(MARK):
            found = text[len(MARK) :]
    if found is None:
        return None
    try:
        data = json.loads(found)
        return BaseCheck(
            tuple(str(n) for n in data["provided"]),
            tuple(_change(c) for c in data["replaced"]),
            tuple(_change(c) for c in data["moved"]),
        )
    except (ValueError, KeyError, TypeError):
        return None


def _change(c: dict) -> Change:  # type: ignore[type-arg]
    return Change(str(c["name"]), tuple(map(str, c["before"])), tuple(map(str, c["after"])))


def is_facts(line: str) -> bool:
    return line.strip().startswith(MARK)

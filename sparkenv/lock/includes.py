"""Every file a requirements file pulls in (`-r`, `-c`), read through the safe-read helper first.

pip-requirements-parser opens the files itself with a plain open(): a FIFO among the includes would hang
it and /dev/zero would fill memory. Walking the includes here first, with the same rules as every other
user-supplied file, turns those into one line naming the file and the line that includes it.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path

from sparkenv import safe_read

_INCLUDE = re.compile(r"^\s*(?:-r|-c|--requirement|--constraint)(?:\s*=\s*|\s+)(\S+)", re.MULTILINE)
REQUIREMENTS_LIMIT = 16 << 20
_MAX_FILES = 1000  # includes form a tree in practice; this bounds a hostile one


@dataclass(frozen=True)
class _Include:
    line: str  # "FILE:LINE" of the including line, as the user sees FILE
    target: str  # what that line names
    folder: Path  # the including file's folder: the target is relative to it


def prescan(path: Path, shown: str, fence: Path | None = None) -> dict[Path, str]:
    """Read `path` and everything it includes; returns {resolved path: text}. UnreadableFile names the
    first file that cannot be read ("TOP:LINE: cannot open included file X: reason" for an include).
    With `fence` (inputs named by a lock), an include outside that folder is refused before it is read."""
    texts: dict[Path, str] = {}
    todo: list[tuple[Path, str, _Include | None]] = [(path, shown, None)]
    while todo and len(texts) < _MAX_FILES:
        current, current_shown, inc = todo.pop()
        try:
            key = current.resolve()
        except (OSError, RuntimeError):  # a symlink loop on Python 3.10/3.12 raises here
            key = current
        if key in texts:
            continue
        if fence is not None and inc is not None:
            from sparkenv.confine import inside

            inside(fence, inc.target, inc.folder, inc.line)
        try:
            text = safe_read.read_text(
                current, what="a requirements file", limit=REQUIREMENTS_LIMIT, errors="strict"
            )
        except safe_read.UnreadableFile as exc:
            if inc is None:
                raise
            reason = f"cannot open included file {inc.target}: {exc.reason}"
            raise safe_read.UnreadableFile(inc.line, reason) from None
        texts[key] = text
        for lineno, line in enumerate(text.splitlines(), 1):
            m = _INCLUDE.match(line)
            if m and "://" not in m.group(1):
                target = m.group(1)
                shown_target = str(Path(current_shown).parent / target)
                todo.append(
                    (
                        current.parent / target,
                        shown_target,
                        _Include(f"{current_shown}:{lineno}", target, current.parent),
                    )
                )
    return texts

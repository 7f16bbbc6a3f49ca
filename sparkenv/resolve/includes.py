"""Every file a requirements file pulls in (`-r`, `-c`), read through the safe-read helper first.

pip-requirements-parser opens the files itself with a plain open(): a FIFO among the includes would hang
it and /dev/zero would fill memory. Walking the includes here first, with the same rules as every other
user-supplied file, turns those into one line naming the file and the line that includes it.
"""

from __future__ import annotations

import re
from pathlib import Path

from sparkenv import safe_read

_INCLUDE = re.compile(r"^\s*(?:-r|-c|--requirement|--constraint)(?:\s*=\s*|\s+)(\S+)", re.MULTILINE)
REQUIREMENTS_LIMIT = 16 << 20
_MAX_FILES = 1000  # includes form a tree in practice; this bounds a hostile one


def prescan(path: Path, shown: str) -> dict[Path, str]:
    """Read `path` and everything it includes; returns {resolved path: text}. UnreadableFile names the
    first file that cannot be read ("TOP:LINE: cannot open included file X: reason" for an include)."""
    texts: dict[Path, str] = {}
    todo: list[tuple[Path, str, tuple[str, str] | None]] = [(path, shown, None)]
    while todo and len(texts) < _MAX_FILES:
        current, current_shown, included_from = todo.pop()
        try:
            key = current.resolve()
        except (OSError, RuntimeError):  # a symlink loop on Python 3.10/3.12 raises here
            key = current
        if key in texts:
            continue
        try:
            text = safe_read.read_text(
                current, what="a requirements file", limit=REQUIREMENTS_LIMIT, errors="strict"
            )
        except safe_read.UnreadableFile as exc:
            if included_from is None:
                raise
            line, target = included_from
            reason = f"cannot open included file {target}: {exc.reason}"
            raise safe_read.UnreadableFile(line, reason) from None
        texts[key] = text
        for lineno, line in enumerate(text.splitlines(), 1):
            m = _INCLUDE.match(line)
            if m and "://" not in m.group(1):
                target = m.group(1)
                shown_target = str(Path(current_shown).parent / target)
                todo.append((current.parent / target, shown_target, (f"{current_shown}:{lineno}", target)))
    return texts

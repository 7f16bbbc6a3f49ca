"""Every file a requirements file pulls in (`-r`, `-c`), read through the safe-read helper first.

pip-requirements-parser opens the files itself with a plain open(): a FIFO among the includes would hang
it and /dev/zero would fill memory. Walking the includes here first, with the same rules as every other
user-supplied file, turns those into one line naming the file and the line that includes it.

The includes are found by the parser's own line reading (its `preprocess`: comments, `\\` continuations;
its option parser: `-r../x`, `-c../x`, `--pre -r ../x`, `--requirement=x`, abbreviations), and each
target joined to its file's folder the way the parser joins it: so the confinement check (for inputs a
lock names) sees exactly the files the parser will open, not what a regular expression guessed. A tree of
more than MAX_FILES files is refused, not cut short (the parser would go on reading past the cut).
"""

from __future__ import annotations

import os
import re
from dataclasses import dataclass
from pathlib import Path

from sparkenv.core import safe_read

REQUIREMENTS_LIMIT = 16 << 20
MAX_FILES = 1000  # includes form a tree in practice; this bounds a hostile one


@dataclass(frozen=True)
class Include:
    line: str  # "FILE:LINE" of the including line, as the user sees FILE
    target: str  # what that line names
    folder: Path  # the including file's folder: the target is relative to it


# pip splits a line into tokens at spaces and takes a token starting with "-" for an option; any "-"
# at a line's start or after whitespace, outside a comment, is a superset of that (pip drops comments,
# `#` at a line's start or after whitespace, before it reads options; a line it joins to the next with
# `\` is read by this per line, which only finds more)
_MAYBE_OPTION = re.compile(r"(^|\s)-", re.MULTILINE)
_COMMENT = re.compile(r"(^|[^\S\n])#.*$", re.MULTILINE)


def includes_of(text: str) -> list[tuple[int, str]]:
    """(line number, target) of every `-r`/`-c` include in a requirements file's text, read by
    pip-requirements-parser's own preprocessing and option parser. A line the parser cannot read is
    skipped here: the parser reports it as an invalid line when the file is parsed."""
    if not _MAYBE_OPTION.search(_COMMENT.sub("", text)):
        # no token starts with "-": no option, so no include (and no parser import for check or lock; a
        # file's comments often quote a command line: `pip install --no-deps …`)
        return []
    from pip_requirements_parser import (
        CommentLine,
        OptionParsingError,
        break_args_options,
        get_line_parser,
        preprocess,
    )

    parse_line = get_line_parser()
    found = []
    for numbered in preprocess(text):
        if isinstance(numbered, CommentLine):
            continue
        lineno, line = numbered
        if not break_args_options(line)[1]:
            continue  # no option on the line: a requirement, never an include
        try:
            _, options, _ = parse_line(line)
        except (OptionParsingError, ValueError):  # ValueError: shlex's unbalanced quote
            continue
        # the parser follows only the first of several on one line: list them all, so none is unread
        for target in [*(options.requirements or []), *(options.constraints or [])]:
            found.append((lineno, target))
    return found


def prescan(path: Path, shown: str, fence: Path | None = None, text: str | None = None) -> dict[Path, str]:
    """Read `path` and everything it includes; returns {resolved path: text}. UnreadableFile names the
    first file that cannot be read ("TOP:LINE: cannot open included file X: reason" for an include).
    Every include must lie inside `fence` (the project folder of inputs a lock names), else inside the
    project `path` belongs to (sparkenv.core.confine): one outside is refused before it is read.
    `text`: the top file's text, already read (standard input: `path` is where its includes are relative
    to, a name in the current folder, never opened)."""
    from sparkenv.core.confine import inside, project_root

    # every include is fenced: by the lock's project for inputs a lock names, else by the project the
    # file named on the command line belongs to (its own choice of file is the user's; what it pulls in
    # is a stranger's, in a cloned repository)
    root = fence if fence is not None else project_root(path.parent)
    texts: dict[Path, str] = {}
    todo: list[tuple[Path, str, Include | None]] = [(path, shown, None)]
    while todo:
        current, current_shown, inc = todo.pop()
        try:
            key = current.resolve()
        except (OSError, RuntimeError):  # a symlink loop on Python 3.10/3.12 raises here
            key = current
        if key in texts:
            continue
        if len(texts) >= MAX_FILES:
            raise safe_read.UnreadableFile(
                inc.line if inc else shown, f"includes more than {MAX_FILES} requirements files"
            )
        if inc is not None:
            inside(root, inc.target, inc.folder, inc.line)
        try:
            body = (
                text
                if inc is None and text is not None
                else safe_read.read_text(
                    current, what="a requirements file", limit=REQUIREMENTS_LIMIT, errors="strict"
                )
            )
        except safe_read.UnreadableFile as exc:
            if inc is None:
                raise
            reason = f"cannot open included file {inc.target}: {exc.reason}"
            raise safe_read.UnreadableFile(inc.line, reason) from None
        texts[key] = body
        for lineno, target in includes_of(body):
            if _is_url(target):  # the parser would open() the URL's text as a path relative to the cwd
                raise safe_read.UnreadableFile(
                    f"{current_shown}:{lineno}",
                    f"includes {target}: a URL; sparkenv reads only local requirements files (download it)",
                )
            # os.path.join, as the parser joins: an absolute target replaces the folder
            todo.append(
                (
                    Path(os.path.join(current.parent, target)),
                    os.path.join(os.path.dirname(current_shown), target),
                    Include(f"{current_shown}:{lineno}", target, current.parent),
                )
            )
    return texts


def _is_url(target: str) -> bool:
    from pip_requirements_parser import SCHEME_RE

    return bool(SCHEME_RE.search(target))

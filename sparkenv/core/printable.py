"""Text that any output can carry: names with undecodable bytes shown as `\\xff`, never a crash.

Python decodes file names with surrogateescape, so a dist-info folder named `b'caf\\xff.dist-info'`
becomes the str 'caf\\udcff.dist-info'. Such a str cannot be encoded as UTF-8 (writing a report, JUnit,
or a strict-UTF-8 stdout fails). Every finding, target and report field passes through `printable`.
"""

from __future__ import annotations

import re
from typing import Any

from sparkenv.core.redact import redact

# Lone surrogates (undecodable bytes), and control characters other than tab and newlines: a file name
# holding ESC would drive the terminal, and XML 1.0 cannot carry C0 controls at all (JUnit).
_UNSAFE = re.compile(r"[\ud800-\udfff\x00-\x08\x0b\x0c\x0e-\x1f\x7f]")


def _escape(m: re.Match[str]) -> str:
    code = ord(m.group())
    if 0xDC80 <= code <= 0xDCFF:  # a byte surrogateescape could not decode
        return f"\\x{code - 0xDC00:02x}"
    if code < 0x80:
        return f"\\x{code:02x}"
    return f"\\u{code:04x}"


def printable(text: str) -> str:
    """`text` with every lone surrogate and control character written as an escape (`\\xff`), and no
    credential (the user-info of a URL: sparkenv.core.redact): what any output may carry."""
    text = redact(text)
    return _UNSAFE.sub(_escape, text) if _UNSAFE.search(text) else text


def printable_tree(value: Any) -> Any:
    """`printable` over every string of a JSON-shaped value (dicts, lists, tuples)."""
    if isinstance(value, str):
        return printable(value)
    if isinstance(value, dict):
        return {printable_tree(k): printable_tree(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [printable_tree(v) for v in value]
    return value

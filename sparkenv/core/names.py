"""Distribution names as PEP 503 normalises them: what packaging.utils.canonicalize_name returns (tests
compare the two), without importing packaging.utils, which pulls packaging.tags, sysconfig, logging and
subprocess into every gate start."""

from __future__ import annotations

import re

_SEPARATORS = re.compile(r"[-_.]+")


def canonical(name: str) -> str:
    """'Flash_Attn' -> 'flash-attn'."""
    return _SEPARATORS.sub("-", name).lower()

"""Distribution names as PEP 503 normalises them: what packaging.utils.canonicalize_name returns
(tests/test_names.py compares the two), without importing packaging.utils, which pulls packaging.tags,
sysconfig, logging and subprocess into the gate's start and every command that loads a data file's records
(benchmarks/README.md "Kept for start-up")."""

from __future__ import annotations

import re

_SEPARATORS = re.compile(r"[-_.]+")


def canonical(name: str) -> str:
    """'Flash_Attn' -> 'flash-attn'."""
    return _SEPARATORS.sub("-", name).lower()

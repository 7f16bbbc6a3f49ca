"""The knowledge files of sparkenv/data, loaded once into frozen, validated objects.

Names are canonicalised (PEP 503) at load, so no caller compares a raw name from a data file; a data
file with a missing or mistyped key fails at load with the file and key named, not at the 28th lookup.
"""

from __future__ import annotations

import functools
import re
from dataclasses import dataclass
from typing import Any

from sparkenv import datafiles


class KnowledgeError(ValueError):
    """A shipped data file does not have the shape the code needs (a packaging bug, not user input)."""


def _canon(name: str) -> str:
    return re.sub(r"[-_.]+", "-", name).lower()


def _get(data: dict[str, Any], file: str, key: str, kind: type) -> Any:
    value = data.get(key)
    if not isinstance(value, kind):
        raise KnowledgeError(f"sparkenv/data/{file}.toml: {key} must be a {kind.__name__}, got {value!r}")
    return value


@dataclass(frozen=True)
class Packages:
    reviewed: str
    drift_prone: tuple[str, ...]  # canonical names, in the file's order
    unsloth_family: tuple[str, ...]
    sdpa_override_pth: str
    sdpa_hook_module: str
    compiles_cuda: dict[str, tuple[str, ...]]  # canonical name -> CPUs PyPI has wheels for
    bitsandbytes_library: re.Pattern[str]


@functools.cache
def packages() -> Packages:
    data = datafiles.load("packages")
    names = lambda key: tuple(dict.fromkeys(_canon(str(n)) for n in _get(data, "packages", key, list)))  # noqa: E731
    compiles = _get(data, "packages", "compiles_cuda", dict)
    return Packages(
        reviewed=str(_get(data, "packages", "reviewed", str)),
        drift_prone=names("drift_prone"),
        unsloth_family=names("unsloth_family"),
        sdpa_override_pth=_get(data, "packages", "sdpa_override_pth", str),
        sdpa_hook_module=_get(data, "packages", "sdpa_hook_module", str),
        compiles_cuda={_canon(k): tuple(str(c) for c in v) for k, v in compiles.items()},
        bitsandbytes_library=re.compile(
            _get(_get(data, "packages", "bitsandbytes", dict), "packages", "library_regex", str)
        ),
    )

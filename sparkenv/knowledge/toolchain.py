"""data/toolchain.toml: which ptxas accepts which arch-specific target, and where Triton keeps its own."""

from __future__ import annotations

import functools
from collections.abc import Mapping
from dataclasses import dataclass

from sparkenv import datafiles
from sparkenv.knowledge.schema import build


@dataclass(frozen=True)
class Ptxas:
    min_release: Mapping[str, str]  # capability "12.1" -> the oldest CUDA release whose ptxas takes sm_121a


@dataclass(frozen=True)
class Triton:
    bundled_dir: str
    blackwell_tool: str
    blackwell_env: str
    default_tool: str
    default_env: str
    blackwell_from_major: int


@dataclass(frozen=True)
class Toolchain:
    reviewed: str
    source: str
    ptxas: Ptxas
    triton: Triton


@functools.cache
def toolchain() -> Toolchain:
    return build(Toolchain, datafiles.load("toolchain"), "toolchain")

"""data/kernels.toml: which GPU code runs on which GPU (G7), and how the fatbin reader is bounded."""

from __future__ import annotations

import functools
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Literal

from sparkenv import datafiles
from sparkenv.knowledge.schema import build

RunsOn = Literal["exact", "same-major", "at-least"]


@dataclass(frozen=True)
class Cost:
    ptx: str  # what a user pays when only PTX fits
    ptx_warn_bytes: int  # fitting PTX smaller than this JITs in well under a second
    lto: str


@dataclass(frozen=True)
class Sections:
    data: tuple[str, ...]  # sections besides .nv_fatbin that may hold fatbins


@dataclass(frozen=True)
class Sparse:
    min_file_bytes: int
    max_fatbin_share: float


@dataclass(frozen=True)
class Limits:
    max_headers: int
    max_entries: int
    max_seconds: float


@dataclass(frozen=True)
class Kernels:
    reviewed: str
    source: str
    runs_on: Mapping[str, Mapping[str, RunsOn]]  # kind (sm, compute, lto) -> suffix ("", a, f) -> rule
    cost: Cost
    sections: Sections
    sparse: Sparse
    limits: Limits


@functools.cache
def kernels() -> Kernels:
    return build(Kernels, datafiles.load("kernels"), "kernels")

"""data/kernels.toml: which GPU code runs on which GPU (G7), and how the fatbin reader is bounded."""

from collections.abc import Mapping
from typing import Any, Literal, NamedTuple

from sparkenv.knowledge.schema import build

RunsOn = Literal["exact", "same-major", "at-least"]


class Cost(NamedTuple):
    ptx: str  # what a user pays when only PTX fits
    ptx_warn_bytes: int  # fitting PTX smaller than this JITs in well under a second
    lto: str


class Sections(NamedTuple):
    data: tuple[str, ...]  # sections besides .nv_fatbin that may hold fatbins


class Sparse(NamedTuple):
    min_file_bytes: int
    max_fatbin_share: float


class Limits(NamedTuple):
    max_headers: int
    max_entries: int
    max_seconds: float
    # what kernel_names (sparkenv attest) reads of a file's cubin symbol tables and PTX, in bytes
    max_symbol_bytes: int = 64 << 20


class Kernels(NamedTuple):
    reviewed: str
    source: str
    runs_on: Mapping[str, Mapping[str, RunsOn]]  # kind (sm, compute, lto) -> suffix ("", a, f) -> rule
    cost: Cost
    sections: Sections
    sparse: Sparse
    limits: Limits


def parse(data: dict[str, Any]) -> Kernels:
    """A parsed kernels.toml as Kernels, or one KnowledgeError naming the file and the key."""
    return build(Kernels, data, "kernels")

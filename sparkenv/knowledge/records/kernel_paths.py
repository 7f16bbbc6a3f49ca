"""data/kernel_paths.toml: kernel names -> backend families, operators -> attention backends, and the
operators that are GPU work (sparkenv attest, gate --attest)."""

import re
from typing import Any, NamedTuple

from sparkenv.knowledge.schema import build


class Probe(NamedTuple):
    markers: tuple[str, ...]


class Family(NamedTuple):
    name: str
    library: str
    pattern: re.Pattern[str]
    source: str
    backend: str = ""  # the attention backend its kernels serve ([[attention]] name), if any
    runtime_compiled: bool = False  # generated at run time: their PTX fills the JIT cache by design
    observed: str = ""
    # the shared objects (file names) whose kernels belong here when no name pattern names them
    files: re.Pattern[str] | None = None


class Attention(NamedTuple):
    name: str
    api: str
    operator: re.Pattern[str]
    source: str


class Cpu(NamedTuple):
    operators: re.Pattern[str]
    fail_share: float
    source: str


class Jit(NamedTuple):
    fail_bytes: int
    source: str


class Path(NamedTuple):
    """An op whose `slow` families (or attention backends) are a fallback where `faster` ones exist for the
    GPUs in `capabilities` ("major.minor")."""

    op: str
    gotcha: str
    slow: tuple[str, ...]
    faster: tuple[str, ...]
    capabilities: tuple[str, ...]
    why: str
    fix: str
    source: str


class Fallback(NamedTuple):
    hot_share: float
    path: tuple[Path, ...]


class KernelPaths(NamedTuple):
    reviewed: str
    probe: Probe
    family: tuple[Family, ...]
    attention: tuple[Attention, ...]
    fallback: Fallback
    cpu: Cpu
    jit: Jit


def parse(data: dict[str, Any]) -> KernelPaths:
    """A parsed kernel_paths.toml as KernelPaths, or one KnowledgeError naming the file and the key."""
    return build(KernelPaths, data, "kernel_paths")

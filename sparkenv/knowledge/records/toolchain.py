"""data/toolchain.toml: which ptxas accepts which arch-specific target, and where Triton keeps its own."""

from collections.abc import Mapping
from typing import Any, NamedTuple

from sparkenv.knowledge.schema import build


class Ptxas(NamedTuple):
    min_release: Mapping[str, str]  # capability "12.1" -> the oldest CUDA release whose ptxas takes sm_121a


class Triton(NamedTuple):
    bundled_dir: str
    blackwell_tool: str
    blackwell_env: str
    default_tool: str
    default_env: str
    blackwell_from_major: int


class Uv(NamedTuple):
    manylinux_levels: tuple[int, ...]  # the manylinux_2_N levels uv's --python-platform names, newest first
    source: str


class Toolchain(NamedTuple):
    reviewed: str
    source: str
    ptxas: Ptxas
    triton: Triton
    uv: Uv


def parse(data: dict[str, Any]) -> Toolchain:
    """A parsed toolchain.toml as Toolchain, or one KnowledgeError naming the file and the key."""
    return build(Toolchain, data, "toolchain")

"""data/packages.toml: the distributions sparkenv treats specially (drift, the Unsloth family, CUDA
builds, the SDPA override's file names)."""

import re
from collections.abc import Mapping
from typing import Any, NamedTuple

from sparkenv.knowledge.schema import DistName, build


class Bitsandbytes(NamedTuple):
    library_regex: re.Pattern[str]  # one group: the CUDA digits of a libbitsandbytes_cudaXYZ.so


class CudaCapable(NamedTuple):
    instead: str  # what to install for a CUDA 13 build
    cuda_files: tuple[str, ...] = ()  # files only its CUDA builds ship
    conclusive: bool = False  # a CUDA build always shows CUDA in its metadata: no evidence means CPU-only


class Packages(NamedTuple):
    reviewed: str
    drift_prone: tuple[DistName, ...]  # in the file's order
    unsloth_family: tuple[DistName, ...]
    sdpa_override_pth: str
    sdpa_hook_module: str
    bitsandbytes: Bitsandbytes
    compiles_cuda: Mapping[DistName, tuple[str, ...]]  # name -> CPUs PyPI has wheels for
    cuda_capable: Mapping[DistName, CudaCapable]
    fallback_days: int  # a resolved version older than the newest release by this much is a fallback

    @property
    def bitsandbytes_library(self) -> re.Pattern[str]:
        return self.bitsandbytes.library_regex


def parse(data: dict[str, Any]) -> Packages:
    """A parsed packages.toml as Packages, or one KnowledgeError naming the file and the key."""
    return build(Packages, data, "packages")

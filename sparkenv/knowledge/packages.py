"""data/packages.toml: the distributions sparkenv treats specially (drift, the Unsloth family, CUDA
builds, the SDPA override's file names)."""

from __future__ import annotations

import functools
import re
from collections.abc import Mapping
from dataclasses import dataclass

from sparkenv import datafiles
from sparkenv.knowledge.schema import DistName, build


@dataclass(frozen=True)
class Bitsandbytes:
    library_regex: re.Pattern[str]  # one group: the CUDA digits of a libbitsandbytes_cudaXYZ.so


@dataclass(frozen=True)
class CudaCapable:
    instead: str  # what to install for a CUDA 13 build
    cuda_files: tuple[str, ...] = ()  # files only its CUDA builds ship
    conclusive: bool = False  # a CUDA build always shows CUDA in its metadata: no evidence means CPU-only


@dataclass(frozen=True)
class Packages:
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


@functools.cache
def packages() -> Packages:
    return build(Packages, datafiles.load("packages"), "packages")

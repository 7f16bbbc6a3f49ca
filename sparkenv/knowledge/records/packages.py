"""data/packages.toml: the distributions sparkenv treats specially (drift, the Unsloth family, CUDA
builds, the SDPA override's file names)."""

import re
from collections.abc import Mapping
from typing import Any, NamedTuple

from sparkenv.knowledge.schema import DistName, build


class PerCudaRelease(NamedTuple):
    library_regex: re.Pattern[str]  # one group: the CUDA digits of a libX_cudaXYZ.so


class Cuda13From(NamedTuple):
    """The first release of `key` whose wheels for `machine` carry CUDA 13 libraries (default index)."""

    key: DistName
    machine: str
    version: str
    before: str  # what earlier releases carry instead
    evidence: str  # what was read in the wheels
    source: str  # a public URL
    checked: str  # the date the wheels were read


class CudaCapable(NamedTuple):
    instead: str  # what to install for a CUDA 13 build; {cuda13_index} stands for Packages.cuda13_index
    cuda_files: tuple[str, ...] = ()  # files only its CUDA builds ship
    conclusive: bool = False  # a CUDA build always shows CUDA in its metadata: no evidence means CPU-only


class Packages(NamedTuple):
    reviewed: str
    drift_prone: tuple[DistName, ...]  # in the file's order
    unsloth_family: tuple[DistName, ...]
    sdpa_override_pth: str
    sdpa_hook_module: str
    per_cuda_release: PerCudaRelease
    cuda13_from: tuple[Cuda13From, ...]
    compiles_cuda: Mapping[DistName, tuple[str, ...]]  # name -> CPUs PyPI has wheels for
    cuda_capable: Mapping[DistName, CudaCapable]
    fallback_days: int  # a resolved version older than the newest release by this much is a fallback
    cuda13_index: str  # PyTorch's index of CUDA 13 builds: the one address every fix names

    def first_cuda13(self, key: str, machine: str) -> Cuda13From | None:
        """The first release of `key` with CUDA 13 libraries for `machine`, when recorded."""
        return next((c for c in self.cuda13_from if c.key == key and c.machine == machine), None)


def parse(data: dict[str, Any]) -> Packages:
    """A parsed packages.toml as Packages, or one KnowledgeError naming the file and the key."""
    return build(Packages, data, "packages")

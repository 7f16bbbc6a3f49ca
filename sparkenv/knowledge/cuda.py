"""data/cuda.toml: what ties a Python distribution to a CUDA major (sonames, names, paths, NGC)."""

from __future__ import annotations

import functools
import re
from collections.abc import Mapping
from dataclasses import dataclass

from sparkenv import datafiles
from sparkenv.knowledge.schema import DistName, build, key


@dataclass(frozen=True)
class Soname:
    pattern: str  # libcudart.so.N; `*` any run of name characters
    majors: Mapping[str, int]  # the .so number -> the CUDA major


@dataclass(frozen=True)
class NameRule:
    regex: re.Pattern[str]  # over a canonical name; one group holds the major
    cuda13: str  # the CUDA 13 name to suggest, {N} the regex's groups
    library: bool = False  # a runtime-library wheel: residue when nothing installed requires it


@dataclass(frozen=True)
class PathRule:
    contains: str
    major: int


@dataclass(frozen=True)
class Cuda:
    reviewed: str
    target_major: int
    ambiguous: tuple[str, ...]  # sonames the same in CUDA 12 and 13: never evidence on their own
    versioned_names: tuple[DistName, ...]  # their version's major IS the CUDA major
    sonames: tuple[Soname, ...] = key("soname")
    names: tuple[NameRule, ...] = key("name")
    paths: tuple[PathRule, ...] = key("path")
    ngc: Mapping[str, int] = key("ngc")  # NGC release (the .nvYY.MM of torch's version) -> CUDA major


@functools.cache
def cuda() -> Cuda:
    return build(Cuda, datafiles.load("cuda"), "cuda")

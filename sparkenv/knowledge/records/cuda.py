"""data/cuda.toml: what ties a Python distribution to a CUDA major (sonames, names, paths, NGC)."""

import re
from collections.abc import Mapping
from types import MappingProxyType
from typing import Any, NamedTuple

from sparkenv.knowledge.schema import DistName, build


class Soname(NamedTuple):
    pattern: str  # libcudart.so.N; `*` any run of name characters
    majors: Mapping[str, int]  # the .so number -> the CUDA major


class NameRule(NamedTuple):
    regex: re.Pattern[str]  # over a canonical name; one group holds the major
    library: bool = False  # a runtime-library wheel: residue when nothing installed requires it


class PathRule(NamedTuple):
    contains: str
    major: int


class Cuda(NamedTuple):
    reviewed: str
    target_major: int
    versioned_names: tuple[DistName, ...]  # their version's major IS the CUDA major
    sonames: tuple[Soname, ...]
    names: tuple[NameRule, ...]
    paths: tuple[PathRule, ...]
    extra_regex: re.Pattern[str]  # an extra that asks for one CUDA major's build; one group holds it
    ngc: Mapping[str, int]  # NGC release (the .nvYY.MM of torch's version) -> CUDA major
    ngc_source: str  # the release notes each entry was read from
    ngc_checked: str  # when
    # field -> the TOML key it reads
    _toml_keys = MappingProxyType({"sonames": "soname", "names": "name", "paths": "path"})


def parse(data: dict[str, Any]) -> Cuda:
    """A parsed cuda.toml as Cuda, or one KnowledgeError naming the file and the key."""
    return build(Cuda, data, "cuda")

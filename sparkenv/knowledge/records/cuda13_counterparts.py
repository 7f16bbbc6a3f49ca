"""data/cuda13_counterparts.toml: for each CUDA-bound family sparkenv names, the distribution that carries
its CUDA 13 build and the versions that do, or the fact that none is known; each entry with a public
source and what the index held when it was checked."""

from types import MappingProxyType
from typing import Any, NamedTuple

from sparkenv.knowledge.schema import DistName, KnowledgeError, build


class Family(NamedTuple):
    family: str  # what a user knows it as (cuFFT, CuPy, TensorRT)
    names: tuple[DistName, ...]  # its distributions bound to an older CUDA major
    source: str  # a public URL saying what its CUDA 13 build is called (or that there is none)
    found: str  # what the index held for linux/aarch64 when checked (`checked` of the file)
    counterpart: str = ""  # the requirement to write instead, extras included ("" when none is known)
    versions: str = ""  # the counterpart's versions that carry CUDA 13 (a PEP 440 specifier, may be empty)
    advice: str = ""  # where none exists: the nearest honest way out
    also: str = ""  # what else the fix must say (an index it is served from, a placeholder to avoid)
    wheel: bool = True  # the counterpart has a wheel for the target on the default index (else sdists)


class Counterparts(NamedTuple):
    reviewed: str
    checked: str  # when each counterpart was resolved for the target (tests/rules/test_counterparts_pypi.py)
    target: str  # the platform they were resolved for
    families: tuple[Family, ...]
    _toml_keys = MappingProxyType({"families": "family"})  # field -> the TOML key it reads


def parse(data: dict[str, Any]) -> Counterparts:
    """A parsed cuda13_counterparts.toml as Counterparts, or one KnowledgeError naming the file and key."""
    found = build(Counterparts, data, "cuda13_counterparts")
    seen: dict[str, int] = {}
    for i, f in enumerate(found.families):
        if not f.counterpart and not f.advice:
            raise KnowledgeError(
                f"sparkenv/data/cuda13_counterparts.toml: family[{i}] names neither a counterpart nor advice"
            )
        for name in f.names:
            if name in seen:
                raise KnowledgeError(
                    f"sparkenv/data/cuda13_counterparts.toml: family[{i}].names: {name} is in "
                    f"family[{seen[name]}] too"
                )
            seen[name] = i
    return found

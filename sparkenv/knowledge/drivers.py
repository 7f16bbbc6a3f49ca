"""data/drivers.toml: the minimum Linux driver of each CUDA release and CUDA's compatibility modes."""

from __future__ import annotations

import functools
from collections.abc import Mapping
from dataclasses import dataclass

from sparkenv import datafiles
from sparkenv.knowledge.schema import build


@dataclass(frozen=True)
class ForwardCompat:
    unsupported_gpus: tuple[str, ...]  # in the GPU's name: the compatibility package does not load there
    dirs: tuple[str, ...]  # where the package puts its libcuda


@dataclass(frozen=True)
class Drivers:
    reviewed: str
    source: str
    toolkit: Mapping[str, str]  # CUDA release "13.0.2" -> its minimum driver
    minor_compat: Mapping[str, str]  # CUDA major "13" -> the driver that runs every release of it
    forward_compat: ForwardCompat


@functools.cache
def drivers() -> Drivers:
    return build(Drivers, datafiles.load("drivers"), "drivers")

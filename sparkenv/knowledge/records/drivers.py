"""data/drivers.toml: the minimum Linux driver of each CUDA release and CUDA's compatibility modes."""

from collections.abc import Mapping
from typing import Any, NamedTuple

from sparkenv.knowledge.schema import build


class ForwardCompat(NamedTuple):
    unsupported_gpus: tuple[str, ...]  # in the GPU's name: the compatibility package does not load there
    dirs: tuple[str, ...]  # where the package puts its libcuda


class Drivers(NamedTuple):
    reviewed: str
    source: str
    toolkit: Mapping[str, str]  # CUDA release "13.0.2" -> its minimum driver
    minor_compat: Mapping[str, str]  # CUDA major "13" -> the driver that runs every release of it
    forward_compat: ForwardCompat
    unverified: tuple[str, ...] = ()  # [toolkit] rows whose minimum is not NVIDIA's exact figure


def parse(data: dict[str, Any]) -> Drivers:
    """A parsed drivers.toml as Drivers, or one KnowledgeError naming the file and the key."""
    return build(Drivers, data, "drivers")

"""The knowledge files of sparkenv/data, each loaded once into frozen, validated records.

`knowledge.gate()` is data/gate.toml, `knowledge.cuda()` data/cuda.toml, and so on: one cached loader per
file, whose shape is the typed records of `knowledge/records/<file>.py` (built by `knowledge.schema`). A
missing, unknown or mistyped key fails at load naming the file and key (KnowledgeError: exit 2, or the
ERROR line of the rule that read it). Callers read attributes, never raw keys.

A file's records module is imported the first time the file is read, not when a caller is imported: the
gate imports most of sparkenv on every start but reads only a few files.
"""

from __future__ import annotations

import functools
import importlib
from collections.abc import Callable, Mapping
from typing import TYPE_CHECKING, Any

from sparkenv.core import datafiles
from sparkenv.knowledge.schema import KnowledgeError

if TYPE_CHECKING:
    from sparkenv.core.report import GotchaId
    from sparkenv.knowledge.records.cuda import Cuda
    from sparkenv.knowledge.records.cuda13_counterparts import Counterparts
    from sparkenv.knowledge.records.drivers import Drivers
    from sparkenv.knowledge.records.gate import Gate
    from sparkenv.knowledge.records.gotchas import GotchaText
    from sparkenv.knowledge.records.hosts import Hosts
    from sparkenv.knowledge.records.kernel_paths import KernelPaths
    from sparkenv.knowledge.records.kernels import Kernels
    from sparkenv.knowledge.records.multinode import Multinode
    from sparkenv.knowledge.records.packages import Packages
    from sparkenv.knowledge.records.playbook_issues import PlaybookIssues
    from sparkenv.knowledge.records.servers import Servers
    from sparkenv.knowledge.records.toolchain import Toolchain
    from sparkenv.knowledge.records.watch import Watch

__all__ = ["FILES", "KnowledgeError"]

FILES = (
    "cuda",
    "cuda13_counterparts",
    "drivers",
    "gate",
    "gotchas",
    "hosts",
    "kernel_paths",
    "kernels",
    "multinode",
    "packages",
    "playbook_issues",
    "servers",
    "toolchain",
    "watch",
)  # sparkenv/data/<name>.toml, each with a loader below


def _loader(name: str) -> Callable[[], Any]:
    @functools.cache
    def load() -> Any:
        records = importlib.import_module(f"sparkenv.knowledge.records.{name}")
        return records.parse(datafiles.load(name))

    load.__name__ = load.__qualname__ = name
    load.__doc__ = f"sparkenv/data/{name}.toml as records, read once per process."
    return load


cuda: Callable[[], Cuda] = _loader("cuda")
cuda13_counterparts: Callable[[], Counterparts] = _loader("cuda13_counterparts")
drivers: Callable[[], Drivers] = _loader("drivers")
gate: Callable[[], Gate] = _loader("gate")
gotchas: Callable[[], Mapping[GotchaId, GotchaText]] = _loader("gotchas")
hosts: Callable[[], Hosts] = _loader("hosts")
kernel_paths: Callable[[], KernelPaths] = _loader("kernel_paths")
kernels: Callable[[], Kernels] = _loader("kernels")
multinode: Callable[[], Multinode] = _loader("multinode")
packages: Callable[[], Packages] = _loader("packages")
playbook_issues: Callable[[], PlaybookIssues] = _loader("playbook_issues")
servers: Callable[[], Servers] = _loader("servers")
toolchain: Callable[[], Toolchain] = _loader("toolchain")
watch: Callable[[], Watch] = _loader("watch")

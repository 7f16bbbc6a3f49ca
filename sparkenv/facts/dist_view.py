"""One distribution as the per-distribution rules (G1's CUDA major, G7's kernels) read it, whoever gathered
it: an installed distribution's RECORD and files (facts/installed.DistFacts, the audit) or a resolved
wheel's central directory and the members read from it (WheelDist, the lock). One view, so that lock and
audit call one judgement (rules/g1_installed.dist_finding) on the same kind of facts."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Protocol

from sparkenv.cuda import coverage
from sparkenv.facts.installed import SharedObject

# GPU code beside the shared objects: CUDA sources and headers (JIT kernels), cubins, PTX, fatbins
GPU_SUFFIXES = (".cu", ".cuh", ".cubin", ".ptx", ".fatbin")


class DistView(Protocol):
    @property
    def key(self) -> str: ...  # PEP 503 normalized name

    @property
    def version(self) -> str: ...

    @property
    def requires(self) -> tuple[str, ...]: ...  # raw Requires-Dist values

    @property
    def files_known(self) -> bool: ...  # its file list was read (RECORD, or the wheel's directory)

    @property
    def so_paths(self) -> list[str]: ...  # every path named like a shared object

    @property
    def shared_objects(self) -> list[SharedObject]: ...  # those whose ELF was read

    @property
    def kernels(self) -> list[coverage.ObjectKernels]: ...  # those that carry GPU code

    @property
    def unread(self) -> str: ...  # why some shared objects' ELF was not read; "" when all were

    @property
    def gpu_package(self) -> bool: ...  # what was not read is said even when nothing else is known

    @property
    def read_from(self) -> str: ...  # " (read from its wheel)" at lock, "" for installed files

    def path_containing(self, needle: str) -> str | None: ...


@dataclass
class WheelDist:
    """A resolved wheel, as `sparkenv lock` reads it: its zip central directory (the paths the audit
    reads from RECORD after install) and, for GPU packages, the ELF and fatbin headers of its members."""

    key: str
    version: str
    requires: tuple[str, ...]
    paths: tuple[str, ...]  # its central directory's shared objects and GPU code (lock/wheel_files.py)
    shared_objects: list[SharedObject] = field(default_factory=list)
    kernels: list[coverage.ObjectKernels] = field(default_factory=list)
    unread: str = ""
    gpu_package: bool = False  # its members' ELF was read (lock/resolved.py)
    read_from: str = " (read from its wheel)"

    @property
    def files_known(self) -> bool:
        return True

    @property
    def so_paths(self) -> list[str]:
        return [p for p in self.paths if not p.lower().endswith(GPU_SUFFIXES)]

    def path_containing(self, needle: str) -> str | None:
        return next((p for p in self.paths if needle in p), None)

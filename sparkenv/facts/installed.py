"""The audit stage's facts: an installed environment as read from outside (audit/scan.py gathers them)."""

from __future__ import annotations

from dataclasses import dataclass, field

from sparkenv.cuda import coverage, elf, toolchain
from sparkenv.environment import container
from sparkenv.environment.distributions import Distribution, MetadataProblem
from sparkenv.environment.target import Target
from sparkenv.facts.lock import Lock, ProfileOfLock
from sparkenv.facts.ngc import NgcFacts


@dataclass(frozen=True)
class SharedObject:
    relpath: str  # relative to the site folder, as in RECORD
    info: elf.ElfInfo


@dataclass(frozen=True)
class FileProblem:
    path: str  # absolute
    owner: str  # distribution key
    reason: str


@dataclass
class DistFacts:
    dist: Distribution
    so_paths: list[str] = field(default_factory=list)  # every installed path named like a shared object
    shared_objects: list[SharedObject] = field(default_factory=list)
    problems: list[FileProblem] = field(default_factory=list)
    kernels: list[coverage.ObjectKernels] = field(default_factory=list)  # objects that carry GPU code
    unread: str = ""  # every readable shared object is read at audit
    gpu_package: bool = False
    read_from: str = ""

    # the per-distribution view (facts/dist_view.DistView) the lock's wheels provide too
    @property
    def key(self) -> str:
        return self.dist.key

    @property
    def version(self) -> str:
        return self.dist.version

    @property
    def requires(self) -> tuple[str, ...]:
        return self.dist.requires

    @property
    def files_known(self) -> bool:
        return self.dist.files_known

    def path_containing(self, needle: str) -> str | None:
        return self.dist.path_containing(needle)


@dataclass
class AuditFacts:
    target: Target
    dists: dict[str, DistFacts]  # by normalized name; the first on the path wins, as at import time
    shadowed: list[Distribution]
    metadata_problems: list[MetadataProblem]
    container: container.ContainerFacts
    ngc: NgcFacts
    lock: Lock | None
    sdpa_override: str | None  # path of the override's .pth file when installed
    shared_object_count: int = 0
    gpu: coverage.Capability | None = None  # the GPU kernels are judged for (G7); None: not checked
    triton: toolchain.TritonTools | None = None
    lock_profile: ProfileOfLock | None = None  # --lock's profile, when the lock records one

"""The resolve stage's facts: the set `sparkenv lock` resolved, every locked file and how each got there."""

from __future__ import annotations

import functools
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from packaging.requirements import Requirement

from sparkenv.cuda.coverage import ObjectKernels
from sparkenv.cuda.elf import ElfInfo
from sparkenv.environment.markers import evaluator
from sparkenv.environment.profiles import Profile
from sparkenv.facts import graph
from sparkenv.facts.graph import Edge
from sparkenv.index.integrity import HashMismatch

if TYPE_CHECKING:
    from packaging.markers import Marker


@dataclass(frozen=True)
class FallbackFacts:
    """What the index says about one locked package that may be a fallback (judged in rules/g9.py)."""

    key: str
    version: str
    newest: str
    gap_days: int | None  # upload-time of the newest release minus the locked one's; None: no dates
    newer_minor: bool  # the newest release has a higher major or minor
    user_capped: bool  # the user's own requirement excludes the newest release
    caps: tuple[str, ...]  # chains whose requirement excludes the newest release
    reasons: tuple[str, ...]  # why newer releases did not fit, when nothing in the graph caps them


@dataclass(frozen=True)
class SdistBuild:
    """What an sdist builds, read from its own build files (lock/sdist_scan.py; judged in rules/g2.py).

    kind: 'cuda' (compiles CUDA or C++ against torch), 'native' (C/C++/Cython/Rust, not against torch),
    'pure' (nothing to compile), 'unknown' (the sdist could not be read; evidence says why)."""

    key: str
    kind: str
    evidence: tuple[str, ...] = ()
    via: str = "the sdist"  # or "cache", or "packages.toml" (a known answer)


@dataclass(frozen=True)
class BuildFailure:
    """uv could not build or download one package while resolving (lock/uvdriver.py reads uv's words)."""

    key: str
    version: str
    action: str  # build, download and build, download …
    cause: str  # the first line of the real cause
    sdist: str | None = None  # its sdist's file name on the index, when there is one
    index: str = ""  # the index its build said it downloads the real wheel from (a placeholder wheel)


@dataclass(frozen=True)
class Unresolved:
    """A requirement uv found no set of versions for (lock/uvdriver.py reads uv's words); the rest was
    resolved without it. `nearest`: the release of `key` nearest to the one uv tried that has a wheel for
    the target, read from the index ("" when none has one; `releases_read` False when the page could not be
    read)."""

    key: str  # "" when uv's words name no single package
    kind: str  # rules/unresolved.py KINDS
    tried: str  # the release uv names ("" when none)
    cause: str  # uv's reasoning in one line
    platforms: str = ""  # uv's hint: the platforms that have wheels of `tried`
    nearest: str = ""
    releases_read: bool = False


@dataclass(frozen=True)
class WheelElves:
    """The ELF and fatbin facts of a GPU package wheel's shared objects read at lock
    (lock/wheel_elf.py)."""

    objects: tuple[tuple[str, ElfInfo], ...]  # (path in the wheel, its ELF facts) of the members read
    unread: str = ""  # why some were not read (past the budget …); "" when all were
    kernels: tuple[ObjectKernels, ...] = ()  # the members read that carry GPU code (fatbin headers)
    # every lock reads this wheel so: all of it, or all but members over a limit of their own (a file's
    # size, the files a wheel); False when a later lock may read more (the lock's budget ran out, a
    # read failed)
    settled: bool = True


@dataclass(frozen=True)
class MetadataProblem:
    """A locked file whose metadata could not be read (`reason`), or whose Requires-Dist values are not
    valid requirements (`invalid`): its requirements are unchecked (judged in rules/g9_resolved.py)."""

    key: str
    version: str
    file: str
    reason: str | None = None
    invalid: tuple[str, ...] = ()


@dataclass
class Locked:
    key: str
    version: str
    stage: str
    wheels: list[str] = field(default_factory=list)  # file names
    sdist: str | None = None
    requires: list[Requirement] | None = None  # Requires-Dist, None when unknown


@dataclass(frozen=True)
class ResolvedFacts:
    """What `sparkenv lock` sees after resolution: every locked file, and how each got there."""

    locked: dict[str, Locked]
    roots: tuple[str, ...]
    profile: Profile
    no_deps_stage: str | None
    # What was kept out of resolution: None means all the base provides (less under --allow-replace).
    excluded_names: tuple[str, ...] | None = None
    # Every Requires-Dist that applies on the target, extras followed (resolve/graph.py).
    edges: tuple[Edge, ...] = ()
    # Base packages replaced on purpose (`sparkenv lock --allow-replace`), with their other names.
    allow_replace: frozenset[str] = frozenset()
    # RECORD text of the CUDA-capable members whose metadata shows no CUDA (read by range requests).
    records: dict[str, str] = field(default_factory=dict)
    # What the index says about declared requirements not pinned exactly and sdist-only picks.
    fallbacks: tuple[FallbackFacts, ...] = ()
    # Files whose metadata could not be read, or holds Requires-Dist values that are not requirements.
    metadata_problems: tuple[MetadataProblem, ...] = ()
    # What each sdist-only pick (and each package uv could not build) compiles, read from its sdist.
    sdist_builds: dict[str, SdistBuild] = field(default_factory=dict)
    # Packages uv could not build or download; the rest was resolved without them.
    build_failures: tuple[BuildFailure, ...] = ()
    # Requirements uv found no set of versions for; the rest was resolved without them.
    unresolved: tuple[Unresolved, ...] = ()
    # The shared objects each resolved binary wheel ships (its zip central directory), or why it could
    # not be read (lock/wheel_files.py): the paths the audit reads from RECORD, known at lock.
    wheel_files: dict[str, tuple[str, ...] | str] = field(default_factory=dict)
    # DT_NEEDED of the shared objects in the GPU packages' wheels ((path, ElfInfo) …), or why they were
    # not read (lock/wheel_elf.py: a budget per lock).
    wheel_elves: dict[str, WheelElves] = field(default_factory=dict)
    # The extras each declared requirement asks for (`vllm[audio]`): where the chains start.
    root_extras: dict[str, set[str]] = field(default_factory=dict)
    # Files of the lock read whole whose bytes do not match the index's sha256 (index/integrity.py).
    hash_mismatches: tuple[HashMismatch, ...] = ()

    @functools.cached_property
    def versions(self) -> dict[str, str]:
        return {k: p.version for k, p in self.locked.items()}

    @functools.cached_property
    def graph_chain(self) -> dict[str, list[str]]:
        """Shortest chains through `edges`, each step with the extra it was asked for (facts/graph.py)."""
        return graph.chains(self.locked, list(self.edges), list(self.roots), self.root_extras)

    @functools.cached_property
    def base_versions(self) -> dict[str, str]:
        """Name (and other names) -> the base's version, for what stays the base's."""
        prof = self.profile
        return {
            k: prof.provides[p]
            for k in prof.excluded()
            if (p := prof.provider(k)) and k not in self.allow_replace
        }

    @property
    def excluded(self) -> set[str]:
        return set(self.profile.excluded() if self.excluded_names is None else self.excluded_names)

    @functools.cached_property
    def env(self) -> dict[str, str]:
        return self.profile.marker_env()

    def chain(self, key: str) -> str:
        return " → ".join(self.graph_chain.get(key, [key]))

    def describe(self, key: str) -> str:
        return f"{key} {self.locked[key].version} (via {self.chain(key)})"

    def evidence(self, key: str) -> tuple[str, ...]:
        pkg = self.locked[key]
        return (*(x for x in (*pkg.wheels, pkg.sdist) if x), f"via {self.chain(key)}")

    @functools.cached_property
    def _holds(self) -> Callable[[Marker | None], bool]:
        return evaluator(self.env)  # the rules ask it of every Requires-Dist, some twice

    def applicable_requires(self, key: str) -> list[Requirement]:
        """Requires-Dist of `key` whose markers hold on the target."""
        holds = self._holds
        return [r for r in self.locked[key].requires or [] if holds(r.marker)]

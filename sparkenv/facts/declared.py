"""The declare stage's facts: the project's requirements as written (lock/inputs.py reads them)."""

from __future__ import annotations

import functools
from dataclasses import dataclass, field

from packaging.markers import Marker
from packaging.specifiers import SpecifierSet

from sparkenv.core.pins import exact_pin
from sparkenv.environment.markers import applies
from sparkenv.environment.profiles import Profile


@dataclass(frozen=True)
class Declared:
    """One declared requirement, with where it was declared."""

    key: str | None  # normalized name; None for an unnamed editable/path
    text: str  # what the resolver is given (no hashes, paths made absolute)
    where: str  # "file:line"
    specifier: SpecifierSet = field(default_factory=SpecifierSet)
    marker: Marker | None = None
    extras: frozenset[str] = frozenset()
    url: str | None = None
    editable: bool = False
    constraint: bool = False
    no_deps: bool = False  # declared in a --no-deps stage

    def applies(self, marker_env: dict[str, str]) -> bool:
        return applies(self.marker, marker_env)

    @property
    def exact(self) -> str | None:

        return exact_pin(self.specifier)


@dataclass(frozen=True)
class DeclaredFacts:
    """What `sparkenv check` (and the first step of `sparkenv lock`) sees: the project's requirements.

    `staged`: sparkenv lock installs the Unsloth family in its own --no-deps stage and pins every
    package, so those two rules are satisfied by construction there.
    """

    declared: tuple[Declared, ...]
    profile: Profile
    index_urls: tuple[str, ...]
    staged: bool = False
    offline: bool = False  # sparkenv check: nothing is resolved, and the report says what that leaves out
    allow_replace: frozenset[str] = (
        frozenset()
    )  # sparkenv lock --allow-replace: base packages replaced on purpose

    @functools.cached_property
    def applicable(self) -> tuple[Declared, ...]:
        """Requirements (not constraints) whose markers hold on the target."""
        env = self.profile.marker_env()
        return tuple(d for d in self.declared if d.key and not d.constraint and d.applies(env))

    @property
    def counted(self) -> int:
        return sum(1 for d in self.declared if d.key and not d.constraint)

    @property
    def skipped(self) -> int:
        return self.counted - len(self.applicable)

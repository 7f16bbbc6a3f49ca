"""Is a base image what a lock was made for? The base as read (facts/base_image.py) against the lock's
profile: the Python the wheels were chosen for (version and implementation), the CPU, a glibc no older
than the wheels need, and every package the profile says the base provides, at its version.

`sparkenv build` asks this before its first step: a lock's wheels installed on another base fail late
(pip's "No matching distribution" at step 15 for another Python) or, worse, install and break at run
time (a torch the lock's extensions were not built against). A newer glibc than the profile's is no
difference: every wheel for the older one runs there.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

from packaging.utils import canonicalize_name
from packaging.version import InvalidVersion, Version

if TYPE_CHECKING:
    from sparkenv.environment.profiles import Profile
    from sparkenv.facts.base_image import BaseImage

MACHINES = {"amd64": "x86_64", "x86_64": "x86_64", "arm64": "aarch64", "aarch64": "aarch64"}


@dataclass(frozen=True)
class Difference:
    what: str  # "Python", "CPU", "glibc", a distribution's name
    base: str  # what the base has ("absent" for a provided package it lacks)
    target: str  # what the lock's profile says

    def describe(self) -> str:
        return f"{self.what} {self.base} (the profile: {self.target})"


def differences(base: BaseImage, profile: Profile, machine: str) -> list[Difference]:
    """What keeps `base` from being the lock's target; `machine` is the build's CPU (its --platform)."""
    out: list[Difference] = []
    if base.python_minor != profile.python_minor:
        out.append(Difference("Python", base.python, profile.python))
    elif base.implementation and base.implementation != "CPython":
        out.append(Difference("Python", f"{base.implementation} {base.python}", f"CPython {profile.python}"))
    cpu = MACHINES.get(base.architecture.lower()) or MACHINES.get(base.machine.lower(), base.machine)
    if cpu != machine:
        out.append(Difference("CPU", cpu or "unknown", machine))
    if profile.glibc and _older(base.glibc, profile.glibc):
        out.append(Difference("glibc", base.glibc or "none (not a glibc system)", profile.glibc))
    installed = {canonicalize_name(k): v for k, v in base.dists.items()}
    for name, wanted in sorted(profile.provides.items()):
        has = installed.get(name)
        if has is None:
            out.append(Difference(name, "absent", wanted or "provided"))
        elif wanted and not _same(has, wanted):
            out.append(Difference(name, has, wanted))
    return out


def _older(have: str, want: str) -> bool:
    try:
        return not have or Version(have) < Version(want)
    except InvalidVersion:
        return have != want


def _same(have: str, want: str) -> bool:
    try:
        return Version(have) == Version(want)
    except InvalidVersion:
        return have == want

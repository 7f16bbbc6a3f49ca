"""The facts of a lock's status, judged by rules/g9.py (Stage.LOCKFILE): what `sparkenv lock` may do with
the lock it resolved, and, for `sparkenv lock --check`, each written lock against its inputs as they are
now. Gathered by lock/judging.py and resolve/lock_check.py; nothing here decides."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Outcome:
    """`sparkenv lock` after the declared and resolved rules ran, before anything is written."""

    pylock: str
    requirements: str
    inputs_fail: bool = False  # the declared requirements have a FAIL: nothing was resolved
    fails: int = 0  # FAIL findings of the resolved set
    unknown: int = 0  # ERROR findings: files whose metadata (so whose requirements) could not be read
    packages: int = 0
    stages: int = 0


@dataclass(frozen=True)
class Currency:
    """One written lock against its inputs as they are now (`sparkenv lock --check`)."""

    pylock: str
    output_dir: str
    inputs: tuple[str, ...] = ()  # as the lock records them, relative to output_dir
    profile: str = ""  # "" when the lock could not be read (another format)
    digest: str = ""  # the inputs' digest now
    exists: bool = True
    missing_input: str = ""  # an input the lock records that no longer exists, from the working folder
    other_format: bool = False
    inputs_changed: bool = False
    profile_changed: bool = False
    requirements_missing: str = ""  # the hashed requirements file the lock names, when it is gone
    command_inputs: tuple[str, ...] = ()  # the inputs as the user types them from the working folder
    command_profile: str = ""  # the profile as typed from there: a shipped name or the file's path
    requirements_disagree: str = ""  # how that file's pins differ from the pylock ("" when they agree)


@dataclass(frozen=True)
class LockFileFacts:
    outcome: Outcome | None = None
    checked: tuple[Currency, ...] = ()
    none_in: str = ""  # `lock --check` in a project with no lock yet: the lock folder it looked in

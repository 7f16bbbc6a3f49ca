"""data/playbook_issues.toml: known problems of the official DGX Spark playbooks (G8)."""

from __future__ import annotations

import functools
from dataclasses import dataclass

from sparkenv import datafiles
from sparkenv.knowledge.schema import DistName, build, key


@dataclass(frozen=True)
class PlaybookIssue:
    id: str
    title: str
    when: tuple[tuple[DistName, str], ...]  # installed distribution and PEP 440 specifier ("" any version)
    fix: str


@dataclass(frozen=True)
class PlaybookIssues:
    as_of: str
    repository: str
    issues: tuple[PlaybookIssue, ...] = key("issue")


@functools.cache
def playbook_issues() -> PlaybookIssues:
    return build(PlaybookIssues, datafiles.load("playbook_issues"), "playbook_issues")

"""data/playbook_issues.toml: known problems of the official DGX Spark playbooks (G8)."""

from types import MappingProxyType
from typing import Any, NamedTuple

from sparkenv.knowledge.schema import DistName, build


class PlaybookIssue(NamedTuple):
    id: str
    title: str
    when: tuple[tuple[DistName, str], ...]  # installed distribution and PEP 440 specifier ("" any version)
    fix: str


class PlaybookIssues(NamedTuple):
    as_of: str
    repository: str
    reviewed: str
    issues: tuple[PlaybookIssue, ...]
    _toml_keys = MappingProxyType({"issues": "issue"})  # field -> the TOML key it reads


def parse(data: dict[str, Any]) -> PlaybookIssues:
    """A parsed playbook_issues.toml as PlaybookIssues, or one KnowledgeError naming the file and the key."""
    return build(PlaybookIssues, data, "playbook_issues")

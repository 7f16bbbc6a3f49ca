"""G8: known problems of the official playbooks that match what is installed (dated data, offline)."""

from __future__ import annotations

from functools import partial
from typing import TYPE_CHECKING

from packaging.specifiers import InvalidSpecifier, SpecifierSet

from sparkenv.core.report import Finding, GotchaId, Status
from sparkenv.knowledge import playbook_issues
from sparkenv.rules import Rule, Stage

if TYPE_CHECKING:
    from sparkenv.facts.live import GateFacts

_finding = partial(Finding, GotchaId.G8)  # every finding of this module is G8's


def live(f: GateFacts) -> list[Finding]:
    data = playbook_issues()
    as_of, repo = data.as_of, data.repository
    if f.section("dists") is None:
        return [
            _finding(
                status=Status.ERROR,
                summary=f"installed packages unknown ({f.probe_error('dists')}); known-issue "
                f"list of {as_of} not matched",
                subject="playbooks",
            )
        ]
    out = []
    for issue in data.issues:
        if issue.when and all(_installed(f.dists, name, spec) for name, spec in issue.when):
            names = ", ".join(f"{n} {f.dists[n]}" for n, _ in issue.when)
            out.append(
                _finding(
                    status=Status.INFO,
                    summary=f"{issue.id} ({names}): {issue.title} [list of {as_of}]",
                    subject=issue.id,
                    evidence=(repo,),
                    fix=issue.fix,
                )
            )
    if not out:
        out.append(
            _finding(
                status=Status.PASS,
                summary=f"no known playbook issue matches the installed packages "
                f"[list of {as_of}; check {repo} for newer ones]",
                subject="playbooks",
            )
        )
    return out


def _installed(dists: dict[str, str], name: str, spec: str) -> bool:
    version = dists.get(name)
    if version is None:
        return False
    try:
        return not spec or SpecifierSet(spec).contains(version, prereleases=True)
    except InvalidSpecifier:
        return False


RULES = (
    Rule(
        Stage.LIVE,
        live,
        "installed versions against the dated list of known playbook problems (data/playbook_issues.toml)",
    ),
)

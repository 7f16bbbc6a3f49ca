"""`sparkenv check`: the policy on declared requirements, offline. Imports only what that needs (the
inputs, the profile, the declared-stage rules): check runs in pre-commit hooks, where start-up is the
cost; the lock's machinery (uv, metadata, the lock file) stays in lock/api.py."""

from __future__ import annotations

import time
from typing import TYPE_CHECKING

from sparkenv.core import safe_read
from sparkenv.lock import inputs as inputs_mod
from sparkenv.lock.inputs import profile_for
from sparkenv.resolve.options import STDIN

if TYPE_CHECKING:
    from sparkenv.core.report import Report


def check(
    paths: list[str],
    profile_arg: str | None,
    platform: str | None,
    extras: list[str] | None = None,
    as_pip: bool = False,
    groups: list[str] | None = None,
) -> Report:
    """Judged as `sparkenv lock` installs the inputs (the same calls lock makes: policy.declared_facts with
    staged=True, then policy.judge_declared), unless `as_pip`: then as a plain `pip install -r` would
    install them."""
    # here, not at the top: the lock imports profile_for before uv starts, the rules once it has
    from sparkenv.core.report import Report, merge_by_subject
    from sparkenv.lock import policy

    started = time.perf_counter()
    inp = inputs_mod.read(paths, extras, groups=groups)
    profile = profile_for(profile_arg, platform, inp)
    index_urls = [u for u in (inp.index_url, *inp.extra_index_urls) if u]
    facts = policy.declared_facts(inp.requirements, profile, index_urls, staged=not as_pip, offline=True)
    findings = policy.judge_declared(facts)
    target = " ".join(safe_read.STDIN if p == STDIN else p for p in paths)
    report = Report("check", target, merge_by_subject(findings), profile=profile.name)
    report.context = {
        "python_platform": profile.python_platform,
        "python": profile.python_minor,
        "requirements": len(inp.requirements),
        "seconds": round(time.perf_counter() - started, 3),
    }
    return report

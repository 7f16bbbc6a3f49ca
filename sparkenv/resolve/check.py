"""`sparkenv check`: the policy on declared requirements, offline. Imports only what that needs (the
inputs, the profile, the declared-stage rules): check runs in pre-commit hooks, where start-up is the
cost; the lock's machinery (uv, metadata, the lock file) stays in resolve/run.py."""

from __future__ import annotations

import time

from sparkenv import profiles
from sparkenv.report import Report, merge_by_subject
from sparkenv.resolve import inputs as inputs_mod
from sparkenv.resolve import policy


def profile_for(arg: str | None, platform: str | None, inp: inputs_mod.Inputs | None) -> profiles.Profile:
    """The target: --profile, else the inputs' [tool.sparkenv] profile, else the default."""
    base_dir = None
    if not arg and inp is not None:
        arg = inp.settings.get("profile") or inp.settings.get("profile-file")
        base_dir = inp.files[0].parent if inp.files else None
    return profiles.load(arg, base_dir).with_platform(platform)


def check(
    paths: list[str],
    profile_arg: str | None,
    platform: str | None,
    extras: list[str] | None = None,
    lock_input: bool = False,
) -> Report:
    started = time.perf_counter()
    inp = inputs_mod.read(paths, extras)
    profile = profile_for(profile_arg, platform, inp)
    index_urls = [u for u in (inp.index_url, *inp.extra_index_urls) if u]
    findings = policy.check_declared(inp.requirements, profile, index_urls, staged=lock_input, offline=True)
    report = Report("check", " ".join(paths), merge_by_subject(findings), profile=profile.name)
    report.context = {
        "python_platform": profile.python_platform,
        "python": profile.python_minor,
        "requirements": len(inp.requirements),
        "seconds": round(time.perf_counter() - started, 3),
    }
    return report

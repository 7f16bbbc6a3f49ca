"""`sparkenv check`: the policy on declared requirements, offline. Imports only what that needs (the
inputs, the profile, the declared-stage rules): check runs in pre-commit hooks, where start-up is the
cost; the lock's machinery (uv, metadata, the lock file) stays in resolve/run.py."""

from __future__ import annotations

import time
from pathlib import Path
from typing import TYPE_CHECKING

from sparkenv.core import project, safe_read
from sparkenv.environment import profiles
from sparkenv.resolve import inputs as inputs_mod
from sparkenv.resolve.options import STDIN

if TYPE_CHECKING:
    from sparkenv.core.report import Report


def profile_for(arg: str | None, platform: str | None, inp: inputs_mod.Inputs | None) -> profiles.Profile:
    """The target: --profile, else the inputs' [tool.sparkenv] profile, else the project root's
    pyproject.toml [tool.sparkenv] profile (a requirements file in a project that names its profile
    there, or `build` with no input), else the default."""
    arg, base_dir = named_profile(arg, inp)
    return profiles.load(arg, base_dir).with_platform(platform)


def named_profile(arg: str | None, inp: inputs_mod.Inputs | None) -> tuple[str | None, Path | None]:
    """The profile something names (--profile, the inputs' or the project's [tool.sparkenv]) and the
    folder it is relative to; (None, None) when only the default is left."""
    base_dir = None
    if not arg and inp is not None:
        arg = inp.settings.get("profile") or inp.settings.get("profile-file")
        base_dir = inp.files[0].parent if inp.files else None
    if not arg:
        arg, base_dir = _project_profile()
    return arg, base_dir


def _project_profile() -> tuple[str | None, Path | None]:
    """The profile the project root's pyproject.toml names in [tool.sparkenv], and the folder it is
    relative to; (None, None) when there is none."""
    pyproject = project.root() / "pyproject.toml"
    if not pyproject.is_file():
        return None, None
    settings = inputs_mod.project_settings(project.from_here(pyproject))
    return settings.get("profile") or settings.get("profile-file"), pyproject.parent


def check(
    paths: list[str],
    profile_arg: str | None,
    platform: str | None,
    extras: list[str] | None = None,
    as_pip: bool = False,
    groups: list[str] | None = None,
) -> Report:
    """Judged as `sparkenv lock` installs the inputs (the same call lock makes: policy.check_declared with
    staged=True), unless `as_pip`: then as a plain `pip install -r` would install them."""
    # here, not at the top: the lock imports profile_for before uv starts, the rules once it has
    from sparkenv.core.report import Report, merge_by_subject
    from sparkenv.resolve import policy

    started = time.perf_counter()
    inp = inputs_mod.read(paths, extras, groups=groups)
    profile = profile_for(profile_arg, platform, inp)
    index_urls = [u for u in (inp.index_url, *inp.extra_index_urls) if u]
    findings = policy.check_declared(inp.requirements, profile, index_urls, staged=not as_pip, offline=True)
    target = " ".join(safe_read.STDIN if p == STDIN else p for p in paths)
    report = Report("check", target, merge_by_subject(findings), profile=profile.name)
    report.context = {
        "python_platform": profile.python_platform,
        "python": profile.python_minor,
        "requirements": len(inp.requirements),
        "seconds": round(time.perf_counter() - started, 3),
    }
    return report

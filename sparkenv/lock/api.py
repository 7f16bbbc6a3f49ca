"""The lock stage's API: `lock` resolves INPUT files for a profile with uv, judges the resolved set and
writes the PEP 751 lock with its hashed requirements when nothing fails. `sparkenv lock`
(resolve/lock_args.py) and `sparkenv build` (image/run.py) both call it; each step is one call to its
owner: the inputs (lock/inputs.py), the plan (lock/plan.py), uv (lock/resolving.py), the judgement and
the files (lock/judging.py)."""

from __future__ import annotations

import time
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING

from sparkenv.core import signals
from sparkenv.core.errors import SparkenvError
from sparkenv.lock import inputs as inputs_mod
from sparkenv.lock import spawn_cache
from sparkenv.lock.inputs import named_profile, profile_for
from sparkenv.lock.judging import judged
from sparkenv.lock.plan import judge_declared, make
from sparkenv.lock.preferences import KEEP, Upgrade
from sparkenv.lock.resolving import begin
from sparkenv.lock.uvdriver import DEFAULT_TIMEOUT

if TYPE_CHECKING:
    # what judges (the rules, the report) is imported once uv has started: only uv's command is
    # needed before (the report, the policy, the credentials are imported after uv's spawn)
    from sparkenv.core.report import Finding, Report


def lock(
    paths: list[str],
    profile_arg: str | None,
    platform: str | None,
    output_dir: str | None,
    index_url: str | None = None,
    extra_index_urls: list[str] | None = None,
    extras: list[str] | None = None,
    timeout: float = DEFAULT_TIMEOUT,
    allow_replace: list[str] | None = None,
    exclude_newer: str | None = None,
    groups: list[str] | None = None,
    progress: bool = False,
    outputs: dict[Path, str] | None = None,
    binding: Callable[[list[Finding]], list[Finding]] | None = None,
    upgrade: Upgrade = KEEP,
    cached: spawn_cache.Cached | None = None,
    inputs: inputs_mod.Inputs | None = None,
) -> Report:
    """Resolve, check, and write the lock when nothing fails. With `outputs` given, the lock's two files
    are put there instead of written, so the caller can write them together with its reports (all or
    nothing). `binding` gives the findings as the user will see them (--select/--ignore, waivers): the
    write is decided on those, so `verdict: ready` always means the lock was written, and a FAIL the user
    ignored or waived does not withhold it. A lock already at the output path gives uv its versions as
    preferences (lock/preferences.py) unless `upgrade` says otherwise.

    uv starts as soon as its command is known (inputs, profile, stages, what is kept out); the judgement
    of the declared requirements and everything else that does not shape uv's command run while it
    resolves. A declared FAIL then stops uv and ends the lock as it would have before uv started.
    `cached`: the command line's key in the spawn cache and the uv started from it, if any
    (lock/spawn_cache.py): kept when its command is the one computed here, else replaced. `inputs`: the
    inputs as already read and changed (a fix on trial, resolve/fixes.py) instead of reading `paths`."""

    started = time.perf_counter()
    plan = make(
        paths, profile_arg, platform, output_dir, index_url, extra_index_urls, extras, allow_replace,
        exclude_newer, groups, inputs,
    )  # fmt: skip
    bind = binding or (lambda found: found)
    with signals.raising():  # the CLI's handlers already raise; a library caller's may not
        uv = begin(plan, upgrade, cached, timeout)
        try:
            expected = uv is not None and bool(uv.out.expected)
            declared, withheld = judge_declared(plan, bind, expected)
            if not withheld and not plan.lockable:
                raise SparkenvError(f"{', '.join(paths)}: no requirement to lock")
            resolution = uv.finish(progress) if uv is not None and not withheld else None
        except KeyboardInterrupt:  # Ctrl-C, SIGTERM, SIGHUP: the closing line says what was cleaned
            if uv is not None:
                uv.interrupted()
            raise
        finally:
            if uv is not None:
                uv.close()
    from sparkenv.core import filing

    try:
        return judged(started, plan, declared, resolution, withheld, progress, outputs, bind)
    finally:  # the cache files made beside the judgement, on every way out
        filing.wait()


__all__ = ["lock", "named_profile", "profile_for"]

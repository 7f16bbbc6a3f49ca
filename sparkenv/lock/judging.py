"""uv's answer judged: the kept judgement of an earlier lock (lock/judged_cache.py) when every page it
rests on is unchanged, else the resolved set read and judged afresh (lock/resolved.py); the lock's
files rendered and filed when the registry says go."""

from __future__ import annotations

import time
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any

from sparkenv.core import project
from sparkenv.environment import profiles
from sparkenv.lock import inputs as inputs_mod
from sparkenv.lock import timeline
from sparkenv.lock import write as lockwrite
from sparkenv.lock.plan import (
    STAGE_MAIN,
    STAGE_UNSLOTH,
    Plan,
    family,
    install_stages,
    late_keys,
    reads_from,
    say,
)
from sparkenv.lock.preferences import KEEP
from sparkenv.lock.resolving import Resolution, digests_now
from sparkenv.lock.uvdriver import IndexOptions, Stage

if TYPE_CHECKING:
    # what judges (the rules, the report) is imported once uv has started: only uv's command is
    # needed before (the report, the policy, the credentials are imported after uv's spawn)
    from sparkenv.core.report import Finding, Report
    from sparkenv.facts.resolved import Locked


CACHED = ("cache", "uv's cache")


def judged(
    started: float,
    plan: Plan,
    declared: list[Finding],
    resolution: Resolution | None,
    withheld: bool,
    progress: bool,
    outputs: dict[Path, str] | None,
    bind: Callable[[list[Finding]], list[Finding]],
) -> Report:
    """uv's answer judged with the declared findings; the lock's files rendered when nothing fails.
    `withheld`: a declared FAIL stopped the lock before uv's answer (nothing resolved, nothing written)."""
    from sparkenv.core.report import Report, Status, merge_by_subject
    from sparkenv.facts import lockfile as lockstatus
    from sparkenv.lock import policy

    paths, inp, profile, index = plan.paths, plan.inp, plan.profile, plan.index
    excluded, allowed, exclude_newer, lock_paths = (
        plan.excluded,
        plan.allowed,
        plan.exclude_newer,
        plan.lock_paths,
    )
    stages = install_stages(inp, profile, plan.stage)
    resolution = resolution if resolution is not None else Resolution()
    target = f"{' '.join(paths)} → {profile.python_platform}"
    pylock_path, req_path = lock_paths
    shown = (project.from_here(pylock_path), project.from_here(req_path))
    if withheld:
        outcome = lockstatus.Outcome(*shown, inputs_fail=True)
        findings = [*declared, *policy.check_lockfile(lockstatus.LockFileFacts(outcome=outcome))]
        return Report("lock", target, merge_by_subject(findings), profile=profile.name)
    from sparkenv.lock import judged_cache

    judgement = judged_cache.key(
        "judgement", judged_cache.code_stamp(), judged_cache.text_sha256(resolution.text), inp, profile,
        index, judged_cache.reads_stamp(reads_from(index)), stages, excluded, sorted(allowed),
        exclude_newer, declared,
    )  # fmt: skip
    kept = None if resolution.failures else _kept_judgement(judgement, index, resolution)
    layout = _layout(judgement, paths, lock_paths, inp, profile, allowed, exclude_newer)
    drawn = judged_cache.rendered(layout) if kept is not None else None
    locked: dict[str, Locked] = {}
    raw: dict[str, dict[str, Any]] = {}
    if drawn is not None:  # the same answer, written the same way as last time: its files as then
        packages, stage_count = drawn.packages, drawn.stages
    else:
        locked, raw = _locked(resolution.text, inp, stages)
        timeline.mark("uv's answer parsed")
        packages, stage_count = len(locked), len(stages)
    if kept is not None:
        resolution.drop()
        findings = [*declared, *kept]
        timeline.mark("kept judgement taken")
        say(progress, f"uv resolved {packages} package(s) as last time: the judgement of then is kept")
    else:
        took = time.perf_counter() - started
        findings = [*declared, *_judge_afresh(judgement, inp, profile, index, allowed, locked, raw,
                                              resolution, progress, took)]  # fmt: skip
    outcome = lockstatus.Outcome(
        *shown,
        # a package uv could not build is missing from the set: no lock, whatever is ignored or waived
        fails=sum(1 for f in bind(findings) if f.status is Status.FAIL) + len(resolution.failures),
        unknown=sum(1 for f in bind(findings) if f.status is Status.ERROR),
        packages=packages,
        stages=stage_count,
    )
    timeline.mark("findings judged")
    verdict = policy.check_lockfile(lockstatus.LockFileFacts(outcome=outcome))
    if all(f.status is Status.PASS for f in verdict):  # the registry's go-ahead: write it
        if drawn is not None:
            files = {pylock_path: drawn.pylock, req_path: drawn.requirements}
        else:
            from sparkenv.lock import lock_files

            files = lock_files.render(
                pylock_path, req_path, profile, inp, index, stages, raw, paths, excluded,
                _tool_extra(allowed, exclude_newer),
            )  # fmt: skip
            if kept is not None or resolution.kept:
                judged_cache.keep_rendered(layout, files[pylock_path], files[req_path], packages, stage_count)
        from sparkenv.core import outputs as output_files

        # a re-lock that renders the very bytes already there leaves those files as they are
        changed = {path: text for path, text in files.items() if not output_files.holds(path, text)}
        if outputs is None:
            lockwrite.write_pair(changed)
        else:
            outputs.update(changed)
        timeline.mark("lock rendered")
        if resolution.before_uv and (kept is not None or resolution.kept):
            # the next plain re-lock replaces this very lock: it may expect uv to answer as now
            again = judged_cache.text_sha256(files[pylock_path])
            judged_cache.predict(judged_cache.key("before uv", *resolution.before_uv, again, KEEP), judgement)
    findings += verdict
    report = Report("lock", target, merge_by_subject(findings), profile=profile.name)
    report.context = {
        "python_platform": profile.python_platform,
        "python": profile.python_minor,
        "packages": packages,
        "excluded": excluded,
        "seconds": round(time.perf_counter() - started, 3),
    }
    return report


def _layout(
    judgement: str,
    paths: list[str],
    lock_paths: tuple[Path, Path],
    inp: inputs_mod.Inputs,
    profile: profiles.Profile,
    allowed: set[str],
    exclude_newer: str | None,
) -> str:
    """The key of the lock's files as rendered (lock/lock_files.render) beside the judgement's: where
    they and the inputs are (paths are written relative to the lock folder), the inputs' bytes (their
    hash is written), the project root a profile file is named from, the options recorded."""
    from sparkenv.lock import judged_cache

    folder = lock_paths[0].parent
    root = project.root(folder) if profile.file else None
    return judged_cache.key(
        "files", judgement, [p.resolve() for p in lock_paths], folder.resolve(),
        [Path(p).resolve() for p in paths], inp.digest(), root, _tool_extra(allowed, exclude_newer),
    )  # fmt: skip


def _kept_judgement(judgement: str, index: IndexOptions, resolution: Resolution) -> list[Finding] | None:
    """The resolved set's findings kept for this judgement's key (lock/judged_cache.py), when every
    index page they rest on is, asked again now as a full judgement asks it, the same bytes; else None."""
    from sparkenv.lock import judged_cache

    entry = judged_cache.load(judgement)
    if entry is None:
        return None
    # asked while uv resolved when this judgement was expected; else now
    now = resolution.digests if resolution.expected == judgement else digests_now(entry)
    for url, sha in entry.pages.values():
        try:
            if now[url].result(timeout=30) != sha:
                return None
        except Exception:  # unreadable now: judged afresh, as it would be without the cache
            return None
    return list(entry.findings)


def _judge_afresh(
    judgement: str,
    inp: inputs_mod.Inputs,
    profile: profiles.Profile,
    index: IndexOptions,
    allowed: set[str],
    locked: dict[str, Locked],
    raw: dict[str, dict[str, Any]],
    resolution: Resolution,
    progress: bool,
    took: float,
) -> list[Finding]:
    """The resolved set's findings, read and judged; kept for the next re-lock when complete (every
    read answered, no build failure, no ERROR)."""
    from sparkenv.index import metadata
    from sparkenv.lock import judged_cache, resolved, wheel_files

    say(progress, f"uv resolved {len(locked)} package(s) in {took:.1f} s; reading their metadata …")
    t_resolved = time.perf_counter()
    resolution.settle(raw)
    timeline.mark("early reads settled")
    # the wheels' file lists first: a wheel's METADATA that came with its central directory
    # (remote_zip.held_dist_info) then needs no request of its own
    so_files = wheel_files.read(resolved.refs(raw))
    metas = metadata.read(resolved.refs(raw), index_url=reads_from(index))
    timeline.mark("metadata read")
    got = resolved.judged(
        inp, profile, locked, raw, metas, allowed, reads_from(index), resolution.pages, resolution.failures,
        so_files,
    )  # fmt: skip
    # the time is the whole judgement's (file lists, ELF, RECORDs, sdists, index pages, the rules), not
    # the metadata's alone
    say(
        progress,
        f"read and judged {len(metas)} file(s) in {time.perf_counter() - t_resolved:.1f} s (their "
        f"metadata: {sum(1 for m in metas.values() if isinstance(m, metadata.Metadata) and m.via in CACHED)} "
        "from caches)",
    )
    if got.complete and not resolution.failures and judged_cache.keepable(got.findings):
        judged_cache.save(judgement, got.findings, got.pages)
        resolution.kept = True
        if resolution.before_uv:
            judged_cache.predict(resolution.before_key, judgement)
    return got.findings


def _locked(
    text: str, inp: inputs_mod.Inputs, stages: list[Stage]
) -> tuple[dict[str, Locked], dict[str, dict[str, Any]]]:
    """uv's answer as the lock's packages, each in its install stage (a --no-deps stage added when a
    dependency brought a late member in)."""
    from sparkenv.lock import from_uv

    late = late_keys(inp)
    locked, raw = from_uv.packages(text, late | family(), STAGE_MAIN, STAGE_UNSLOTH) if text else ({}, {})
    if any(p.stage == STAGE_UNSLOTH for p in locked.values()) and all(
        s.name != STAGE_UNSLOTH for s in stages
    ):
        stages.append(Stage(STAGE_UNSLOTH, [], no_deps=True))
    return locked, raw


def _tool_extra(allowed: set[str], exclude_newer: str | None) -> dict[str, Any]:
    """What the lock records of the options that shaped it, beside the profile and inputs."""
    extra_tool: dict[str, Any] = {"allow-replace": sorted(allowed)} if allowed else {}
    if exclude_newer:
        extra_tool["exclude-newer"] = exclude_newer
    return extra_tool

"""G9 at Stage.LOCKFILE (whether `sparkenv lock` may write the lock; a written lock against its inputs
under `lock --check`) and Stage.IMAGE (the base's packages untouched by the lock's install steps,
sparkenv build)."""

from __future__ import annotations

from functools import partial
from typing import TYPE_CHECKING

from sparkenv.core.report import Finding, GotchaId, Status

if TYPE_CHECKING:
    from sparkenv.facts.image import BaseCheck
    from sparkenv.facts.lockfile import Currency, LockFileFacts, Outcome

_finding = partial(Finding, GotchaId.G9)  # every finding of this module is G9's


def lockfile(facts: LockFileFacts) -> list[Finding]:
    out = [_currency(c) for c in facts.checked]
    if facts.none_in:  # a project without locks (yet): nothing is stale, so hooks and CI pass
        out.append(
            _finding(
                status=Status.INFO,
                summary=f"no pylock.*.toml in {facts.none_in}: nothing to check (sparkenv lock INPUT… "
                "writes one)",
                subject=facts.none_in,
            )
        )
    if facts.outcome is not None:
        out.append(_outcome(facts.outcome))
    return out


def _outcome(o: Outcome) -> Finding:
    """Whether the lock may be written: only when nothing failed and every file could be checked. PASS is
    the writer's go-ahead (lock/judging.py writes the files only then)."""
    if o.inputs_fail:
        summary = "not resolved and no lock written: the inputs fail the policy"
        return _finding(status=Status.INFO, summary=summary, subject="lock")
    if o.unknown and not o.fails:
        # A file whose metadata is unknown has unchecked requirements: a failed lock, not a warning.
        return _finding(
            status=Status.FAIL,
            summary=f"{o.pylock} not written: {o.unknown} file(s) could not be checked (see the ERROR lines)",
            subject="lock",
            fix="make every file's metadata readable, then lock again",
        )
    if o.fails or o.unknown:
        summary = f"{o.pylock} not written: the resolved set fails the policy"
        return _finding(status=Status.INFO, summary=summary, subject="lock")
    what = f"{o.packages} packages, every one pinned with hashes ({o.stages} install stage(s))"
    if not o.packages:
        what = "nothing to lock beyond the base: every requirement is the base's"
    return _finding(
        status=Status.PASS,
        summary=f"wrote {o.pylock} and {o.requirements}: {what}",
        subject=o.pylock,
        evidence=(o.requirements,),
    )


def _currency(c: Currency) -> Finding:
    """Is a written lock current with its inputs and profile (recorded hashes against today's)?"""
    if c.missing_input:
        return _finding(
            status=Status.FAIL,
            summary=f"{c.pylock} records input {c.missing_input}, which no longer exists",
            subject=c.pylock,
            fix="run sparkenv lock again with the current inputs",
        )
    # every path as typed from where the user stands (the stage gave them so): the fix runs as printed, and
    # the inputs named in the summary are the same paths as in the fix
    regen = (
        f"run sparkenv lock {' '.join(c.command_inputs or c.inputs)} --profile "
        f"{c.command_profile or c.profile} --output-dir {c.output_dir}"
        if c.profile
        else "run sparkenv lock INPUT… (this sparkenv's lock format)"
    )
    if not c.exists:
        summary = f"{c.pylock} does not exist"
        return _finding(status=Status.FAIL, summary=summary, subject=c.pylock, fix=regen)
    problems = []
    if c.other_format:
        problems.append("written by another sparkenv lock format")
    if c.inputs_changed:
        problems.append(f"inputs changed since the lock ({', '.join(c.command_inputs or c.inputs)})")
    if c.profile_changed:
        problems.append(f"profile {c.profile} changed since the lock")
    if c.requirements_missing:
        problems.append(f"{c.requirements_missing} is missing")
    if c.requirements_disagree:
        problems.append(f"its hashed requirements file disagrees: it {c.requirements_disagree}")
    if problems:
        summary = f"{c.pylock} is stale: {'; '.join(problems)}"
        return _finding(status=Status.FAIL, summary=summary, subject=c.pylock, fix=regen)
    return _finding(
        status=Status.PASS,
        summary=f"{c.pylock} is current with {', '.join(c.command_inputs or c.inputs)} ({c.profile})",
        subject=c.pylock,
        evidence=(c.digest,),
    )


# ---------------------------------------------------------------------------------------------------
# Stage.IMAGE: the image being built, after the lock's install steps


def image(facts: BaseCheck) -> list[Finding]:
    """The base's packages against the lock's install steps (read inside the image by base_check.py)."""
    out = []
    for change in facts.moved:
        out.append(
            _finding(
                status=Status.INFO,
                summary=f"a package of the base changed: {change.describe()}",
                subject=change.name,
            )
        )
    for change in facts.replaced:
        out.append(
            _finding(
                status=Status.FAIL,
                summary=f"a package the base provides was replaced: {change.describe()}",
                subject=change.name,
                evidence=("/opt/sparkenv/base-packages.json",),
                fix="the lock must not carry what the base provides: re-lock with `sparkenv lock` for this "
                "profile, or drop these pins",
            )
        )
    if not facts.replaced:
        summary = f"the base's {len(facts.provided)} provided packages are untouched"
        out.append(_finding(status=Status.PASS, summary=summary, subject="base"))
    return out

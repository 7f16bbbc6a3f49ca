"""`sparkenv lock --check`: is each lock current with its inputs and profile? Offline: the recorded hashes
against the inputs and profile as they are now."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path
from typing import TYPE_CHECKING

from sparkenv.core import project
from sparkenv.core.errors import SparkenvError
from sparkenv.environment import profiles
from sparkenv.lock import inputs as inputs_mod
from sparkenv.lock import write as lockwrite
from sparkenv.lock.inputs import named_profile, profile_for

if TYPE_CHECKING:
    from sparkenv.core.report import Report
    from sparkenv.facts import lockfile as lockstatus


def lock_check(
    paths: list[str],
    profile_arg: str | None,
    platform: str | None,
    output_dir: str | None,
    extras: list[str] | None = None,
) -> Report:
    """Is each lock current with its inputs? Offline: compares the recorded input and profile hashes."""
    from sparkenv.core import confine
    from sparkenv.core.report import Report, merge_by_subject
    from sparkenv.facts import lockfile as lockstatus
    from sparkenv.lock import policy
    from sparkenv.lock import profile as lockprofile
    from sparkenv.lock import read as lockread
    from sparkenv.lock.lock_files import relative

    out_dir = project.lock_folder(output_dir)
    checked: list[lockstatus.Currency] = []
    profile_name = None
    if paths:
        inp = inputs_mod.read(paths, extras)
        profile = profile_for(profile_arg, platform, inp)
        pylock_path, _ = lockwrite.paths_for(out_dir, profile)
        if not named_profile(profile_arg, inp)[0]:  # the default's lock, else the one lock there
            from sparkenv.lock.present import default_lock

            found = default_lock(out_dir, profile.file_stem, must_exist=False)
            if found != pylock_path:
                other = lockread.pylock(found)
                profile = lockprofile.of_lock(other).with_platform(platform or other.platform)
                pylock_path = found
        profile_name = profile.name
        checked.append(_currency(pylock_path, inp, profile, [relative(Path(p), out_dir) for p in paths]))
    else:
        locks = sorted(out_dir.glob("pylock.*.toml"))
        if not locks and output_dir is None:  # the project's own lockfiles/: none yet is no failure
            facts = lockstatus.LockFileFacts(none_in=project.from_here(out_dir))
            findings = policy.check_lockfile(facts)
            return Report("lock", project.from_here(out_dir), findings, context={"check": True})
        if not locks:
            raise SparkenvError(f"{project.from_here(out_dir)}: no pylock.*.toml to check")
        root = confine.project_root(out_dir, out_dir.parent)
        for pylock_path in locks:
            here = {"pylock": project.from_here(pylock_path), "output_dir": project.from_here(out_dir)}
            try:
                written = lockread.pylock(pylock_path)
            except lockread.OtherFormat:  # its inputs cannot be read from it: stale as it stands
                checked.append(lockstatus.Currency(**here, other_format=True))
                continue
            recorded = list(written.inputs)
            where = f"{pylock_path}: [tool.sparkenv] inputs"
            for p in recorded:  # a lock from another repository must not make sparkenv read outside it
                confine.inside(root, p, out_dir, where)
            missing = [p for p in recorded if not (out_dir / p).is_file()]
            if missing:
                checked.append(
                    lockstatus.Currency(**here, missing_input=project.from_here(out_dir / missing[0]))
                )
                continue
            inp = inputs_mod.read([str(out_dir / p) for p in recorded], fence=root)
            prof = lockprofile.of_lock(written).with_platform(written.platform)
            checked.append(_currency(pylock_path, inp, prof, recorded))
    findings = policy.check_lockfile(lockstatus.LockFileFacts(checked=tuple(checked)))
    # "lock", as the schema names the command; that it only checked is in the context
    findings = merge_by_subject(findings)
    return Report("lock", project.from_here(out_dir), findings, profile=profile_name, context={"check": True})


def _currency(
    pylock_path: Path, inp: inputs_mod.Inputs, profile: profiles.Profile, inputs: list[str]
) -> lockstatus.Currency:
    """A written lock's recorded hashes against the inputs and profile as they are now: facts only. The
    inputs changed when their parsed requirements did (a comment-only edit is no change); a lock written
    before sparkenv recorded that hash is compared by the inputs' bytes. The command that re-locks is
    given as typed from the working folder, whatever folder the lock is in."""
    digest = inp.digest()
    from sparkenv.facts import lockfile as lockstatus
    from sparkenv.lock import profile as lockprofile
    from sparkenv.lock import read as lockread

    folder = pylock_path.parent
    here = lockstatus.Currency(
        project.from_here(pylock_path),
        project.from_here(folder),
        tuple(inputs),
        profile.name,
        digest,
        command_inputs=tuple(project.from_here(folder / p) for p in inputs),
        command_profile=project.from_here(profile.file) if profile.file else profile.name,
    )
    if not pylock_path.is_file():
        return replace(here, exists=False)
    try:
        written = lockread.pylock(pylock_path)
    except lockread.OtherFormat:
        return replace(here, other_format=True)
    req = lockread.requirements_file(written)
    return replace(
        here,
        inputs_changed=(
            written.requirements_hash != inp.requirements_digest()
            if written.requirements_hash
            else written.input_hash != digest
        ),
        profile_changed=lockprofile.changed(written, profile),
        requirements_missing="" if req.is_file() else str(req),
        requirements_disagree=lockread.requirements_disagreement(written),
    )

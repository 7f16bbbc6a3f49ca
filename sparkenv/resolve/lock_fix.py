"""What `sparkenv lock` does after a blocked lock: the fixes tried (resolve/fixes.py) and, under `--fix`,
the ones that worked written and locked.

`--fix` writes each changed input beside its original as NAME.fixed.EXT (requirements.txt ->
requirements.fixed.txt, pyproject.toml -> pyproject.fixed.toml), or over it with `--write`; shows the
unified diff; locks the fixed inputs as `sparkenv lock` would (the lock then names the fixed files as its
inputs); and prints that lock's verdict. Never partial: when the fixed inputs do not lock ready, or
anything fails on the way, each file written is put back as it was (a new .fixed file removed, an
original rewritten with its own bytes) and no lock is written. A change that lands in an included file
(-r) is written only with --write: a .fixed copy beside it would not be the file its parent includes."""

from __future__ import annotations

import difflib
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from sparkenv.core.errors import SparkenvError
from sparkenv.core.report import Report, Verdict
from sparkenv.lock import inputs as inputs_mod
from sparkenv.resolve import fix_edits, fixes

Undo = Callable[[], None]


def say(line: str, progress: bool) -> None:
    if progress:
        print(f"sparkenv lock: {line}", file=sys.stderr, flush=True)


def tried(
    args: Any, report: Report, progress: bool, relock: fixes.Relock, started: float
) -> tuple[Report, list[fix_edits.Edit]]:
    """The blocked report with each fix line as its trial showed, and the edits that worked. The trials
    end by the lock's own deadline (`started` + --timeout, time.monotonic) and within TRIAL_SECONDS."""
    from sparkenv.lock import plan

    try:  # read again as the lock read them (an input that cannot be read twice: no fix is tried)
        inp = inputs_mod.read(args.inputs, args.extra, groups=args.group)
    except (SparkenvError, OSError):
        return report, []
    profile = inputs_mod.profile_for(args.profile, args.platform, inp)
    index = plan.index_options(inp, args.index_url, args.extra_index_url or [])
    reads = plan.reads_from(index)
    deadline = min(started + args.timeout, time.monotonic() + fixes.TRIAL_SECONDS)
    outcomes = fixes.trial(
        report,
        inp,
        lambda found, now: fixes.propose(found, now, profile, reads),
        relock,
        deadline,
        lambda line: say(line, progress or args.fix),
    )
    return fixes.annotate(report, outcomes, profile.python_platform), fixes.works(outcomes)


def written(args: Any, edits: list[fix_edits.Edit], diff_to: Any) -> tuple[list[str], Undo]:
    """The fixed inputs written (beside, or over the originals with --write), the diff shown; the paths
    to lock instead of args.inputs and how to put every file back."""
    from sparkenv.core import outputs

    inp = inputs_mod.read(args.inputs, args.extra, groups=args.group)
    touched = fix_edits.files_touched(inp, edits)
    tops = {str(Path(p)): p for p in args.inputs}
    plan: list[tuple[Path, Path, str, str]] = []  # (original, destination, old text, new text)
    for name, changes in touched.items():
        src = Path(name)
        if not args.write and str(src) not in tops:
            raise SparkenvError(
                f"{name}: the fix changes this included file; a copy beside it would not be included: "
                "run `sparkenv lock --fix --write` to change it in place"
            )
        old = src.read_text(encoding="utf-8")
        try:
            new = fix_edits.on_text(src, old, changes)
        except fix_edits.CannotEdit as exc:
            raise SparkenvError(f"sparkenv lock --fix: {exc}; nothing written") from None
        dest = src if args.write else fix_edits.fixed_name(src)
        plan.append((src, dest, old, new))
    for src, dest, old, new in plan:
        diff_to(
            "".join(difflib.unified_diff(old.splitlines(True), new.splitlines(True), str(src), str(dest)))
        )
    before = {dest: (dest.read_bytes() if dest.exists() else None) for _, dest, _, _ in plan}
    outputs.write_all([(dest, new) for _, dest, _, new in plan])

    def undo() -> None:
        back = [(d, b) for d, b in before.items() if b is not None]
        if back:
            outputs.write_all(back)
        for d, b in before.items():
            if b is None:
                d.unlink(missing_ok=True)

    renamed = {str(src): str(dest) for src, dest, _, _ in plan}
    return [renamed.get(str(Path(p)), p) for p in args.inputs], undo


def apply(
    args: Any,
    report: Report,
    edits: list[fix_edits.Edit],
    relock_paths: Callable[[list[str]], Report],
    machine_stdout: bool,
) -> tuple[Report, Undo | None]:
    """`--fix`: the edits that worked written and locked; the fixed lock's report and how to undo the
    written inputs (the caller writes the lock, and undoes on a failure there). With no edit that
    worked, the tried report as it is: nothing written."""
    if not edits:
        print(
            "sparkenv lock --fix: no proposed fix re-resolved without a FAIL (each fix line says what was "
            "tried); nothing written",
            file=sys.stderr,
            flush=True,
        )
        return report, None
    stream = sys.stderr if machine_stdout else sys.stdout

    def show(text: str) -> None:
        print(text, end="" if text.endswith("\n") else "\n", file=stream, flush=True)

    paths, undo = written(args, edits, show)
    try:
        fixed = relock_paths(paths)
    except BaseException:
        undo()
        raise
    if fixed.verdict is Verdict.BLOCKED:
        undo()
        print(
            "sparkenv lock --fix: the fixed inputs still block (below); every file was put back, nothing "
            "written",
            file=sys.stderr,
            flush=True,
        )
        return fixed, None
    where = "in place" if args.write else "beside the originals"
    print(
        f"sparkenv lock --fix: wrote {', '.join(paths)} ({where}) and locked it", file=sys.stderr, flush=True
    )
    return fixed, undo

"""`sparkenv lock …` read without typer (core/fastargs.py): typer's import (click, pydantic) cost more
than a fifth of a second before uv could start, a third of what a warm `uv pip compile` takes. Its options
are declared once (resolve/options.py LOCK, render/options.py REPORTING), for this parser and the typer
command alike; anything else (--help, a typo, a missing or non-numeric value) returns None
and the typer command answers with its usual words. Both parsers end in `run`."""

from __future__ import annotations

import sys
import time
from collections.abc import Mapping
from typing import Any, NamedTuple

from sparkenv.core import fastargs, optionspec
from sparkenv.core.errors import SparkenvError
from sparkenv.lock import timeline
from sparkenv.render import options as reporting
from sparkenv.resolve.options import LOCK, STDIN, inputs_of

OPTIONS = (*LOCK, *reporting.REPORTING)
# the lock has loaded several hundred modules: its process ends without freeing them one by one
# (sparkenv/cli/process_exit.py leave) once the report is out
SKIP_TEARDOWN = True


# A lock names its inputs so that `lock --check` (CI's, with no argument) and the next re-lock read them
# again; a pipe cannot be read again, and the fix line `lock --check` prints must name a file to re-lock
_STDIN_REFUSED = (
    "sparkenv lock: - (standard input) cannot be locked: a lock records its input files so that "
    "`sparkenv lock --check` can read them again; save the requirements to a file and lock that file"
)


class LockArgs(NamedTuple):
    inputs: list[str]
    profile: str | None
    platform: str | None
    output_dir: str | None
    check_only: bool
    index_url: str | None
    extra_index_url: list[str] | None
    extra: list[str] | None
    group: list[str] | None
    allow_replace: list[str] | None
    exclude_newer: str | None
    timeout: float
    request_timeout: float
    upgrade: bool
    upgrade_package: list[str] | None
    allow_outside: list[str] | None
    fix: bool
    write: bool
    reporting: reporting.ReportOptions

    @classmethod
    def of(cls, inputs: list[str], values: Mapping[str, Any], report: reporting.ReportOptions) -> LockArgs:
        """From either parser: the positional INPUTs, LOCK's values (optionspec.values), the bundle."""
        given, rest = inputs_of(inputs, values)  # -r FILE and INPUT alike
        return cls(inputs=given, reporting=report, **rest)


def parse(argv: list[str]) -> LockArgs | None:
    """argv after `lock`; None where typer should answer."""
    timeline.mark("lock's parser imported")
    try:
        parsed = fastargs.parse(argv, OPTIONS)
    except SparkenvError:  # a value that is not a number: typer's usage error
        return None
    if parsed is None:
        return None
    given, inputs = parsed
    return LockArgs.of(inputs, optionspec.values(LOCK, given), reporting.bundle(given))


def run(args: LockArgs) -> int:
    """The lock (or, under --check, whether the written locks are current), reported; the exit code."""
    from sparkenv.core import confine
    from sparkenv.core.bounds import seconds_problem

    started = time.monotonic()  # the lock's deadline (--timeout) counts from here, fixes tried included
    for flag, seconds in (("--timeout", args.timeout), ("--request-timeout", args.request_timeout)):
        problem = seconds_problem(seconds, zero_ok=False)  # `nan`, `inf`, 0, negatives, 1e10: exit 2
        if problem:
            raise SparkenvError(f"{flag}: {problem}")
    if STDIN in args.inputs:
        raise SparkenvError(_STDIN_REFUSED)
    options = args.reporting.check()
    if args.write and not args.fix:
        raise SparkenvError("--write: only with --fix (it says where the fixed inputs go)")
    if args.check_only:
        from sparkenv.render.emit import emit
        from sparkenv.resolve import lock_check

        confine.allow_outside(args.allow_outside)
        result = lock_check.lock_check(args.inputs, args.profile, args.platform, args.output_dir, args.extra)
        return emit(result, options)
    if not args.inputs:
        raise SparkenvError("sparkenv lock: name the inputs (requirements files, pyproject.toml)")
    from pathlib import Path

    from sparkenv.core import outputs, signals
    from sparkenv.lock import spawn_cache

    progress = not (options.quiet or options.machine_stdout) and sys.stderr.isatty()
    from sparkenv.index import deadline

    # every request to the index from here on, uv's included, within these (index/deadline.py)
    deadline.start(args.request_timeout, args.timeout, _progress_line if progress else None)
    pending: dict[Path, str] = {}
    # a re-lock starts uv from the command its last lock ran (lock/spawn_cache.py), before the modules
    # that compute it are imported; the lock computes it anyway and keeps that uv only when equal
    # (and the work folders a SIGKILLed lock left behind, uv's temporary files in them, swept on a thread)
    fields = tuple(args._replace(check_only=False, timeout=0.0, reporting=None))
    cached = None
    try:
        cached = spawn_cache.begin(fields, args.timeout)
        # what need not come before uv's spawn comes after it: the fence's folders (read by the inputs'
        # reader) and, in begin, the sweep of the work folders a SIGKILLed lock left behind
        confine.allow_outside(args.allow_outside)
        outputs.check(list(options.files))  # before the resolution ends: a bad path, exit 2
        result = _lock(args, progress, pending, options, cached)
        if deadline.total_passed:  # a read of the index was cut by --timeout: no lock from half the reads
            from sparkenv.core.errors import ServiceMissing

            raise ServiceMissing(deadline.total_message())
        result, undo = _after_blocked(args, result, progress, pending, options, started)
    except KeyboardInterrupt:
        if cached is not None and cached.early is not None:
            cached.early.interrupted()
        from sparkenv.core import children

        groups = children.registered()
        if children.kill_all():  # one started but not yet handed over (a signal in between): gone too
            signals.cleaned(f"killed uv (process group {', '.join(map(str, groups))})")
        raise
    finally:
        if cached is not None and cached.early is not None:
            cached.early.discard()  # unless the lock claimed it: an error before it did
    from sparkenv.render.emit import emit, files, shown

    # The lock and the report's files together: validated first, all written or none replaced.
    view = shown(result, options)
    try:
        # the lock files and the report's, all or none: a failing --report leaves the previous lock as it was
        written: list[tuple[str | Path, str]] = [*pending.items(), *files(view, options)]
        if written:
            outputs.write_all(written, make_parents=True)  # the lock folder (lockfiles/) is made when missing
    except BaseException:
        if undo is not None:  # lock --fix: the fixed inputs go back with the lock unwritten
            undo()
        raise
    timeline.mark("lock written")
    if cached is not None:
        cached.commit()  # the command for the next re-lock, its preferences those of the lock just written
    code = emit(view, options._replace(report=None, junit=None, sarif=None))
    timeline.mark("report emitted")
    timeline.flush()
    return code


def _progress_line(line: str) -> None:
    print(f"sparkenv lock: {line}", file=sys.stderr, flush=True)


def _after_blocked(
    args: LockArgs,
    result: Any,
    progress: bool,
    pending: dict[Any, str],
    options: reporting.ReportOptions,
    started: float,
) -> tuple[Any, Any]:
    """A blocked lock: each proposed fix tried before it is printed, and under --fix the ones that
    worked written and locked (resolve/lock_fix.py). The report to show and how to undo what --fix wrote."""
    from sparkenv.core.report import Verdict

    if result.verdict is not Verdict.BLOCKED:
        if args.fix:
            print("sparkenv lock --fix: the lock is not blocked: nothing to fix", file=sys.stderr, flush=True)
        return result, None
    from sparkenv.resolve import lock_fix

    def relock(edited: Any, seconds: float) -> Any:
        out: dict[Any, str] = {}
        return _lock(args._replace(timeout=seconds), False, out, options, None, edited), out

    result, edits = lock_fix.tried(args, result, progress, relock, started)
    if not args.fix:
        return result, None

    def relock_paths(paths: list[str]) -> Any:
        pending.clear()
        return _lock(args._replace(inputs=paths), progress, pending, options, None)

    return lock_fix.apply(args, result, edits, relock_paths, options.machine_stdout)


def _lock(
    args: LockArgs,
    progress: bool,
    pending: dict[Any, str],
    options: reporting.ReportOptions,
    cached: Any,
    edited: Any = None,
) -> Any:
    """The lock itself (lock/api.py, imported here: after the early uv, if any, started). `edited`:
    inputs changed by a fix on trial, locked instead of reading args.inputs."""
    from sparkenv.lock import api as stage
    from sparkenv.lock.preferences import Upgrade

    return stage.lock(
        args.inputs,
        args.profile,
        args.platform,
        args.output_dir,
        args.index_url,
        args.extra_index_url,
        args.extra,
        args.timeout,
        allow_replace=args.allow_replace,
        exclude_newer=args.exclude_newer,
        groups=args.group,
        progress=progress,
        outputs=pending,
        binding=lambda found: _shown(found, options),
        upgrade=Upgrade.of(args.upgrade, args.upgrade_package),
        cached=cached,
        inputs=edited,
    )


def _shown(found: list[Any], options: reporting.ReportOptions) -> list[Any]:
    """The findings as the user will see them (--select, --ignore, waivers): what withholds the lock.
    The renderer is imported here, when the declared findings are judged, while uv resolves."""
    from sparkenv.core.report import Report
    from sparkenv.render.emit import shown

    return shown(Report("lock", "", found), options).report.findings

"""uv's resolution under way (lock/uvdriver.py spawns it) with sparkenv's own reads beside it: the early
reads of uv's picks, the index pages of old fallbacks, the spawn cache's command, the kept judgement
expected; and the head start that imports what will judge uv's answer."""

from __future__ import annotations

import os
import sys
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from sparkenv.core import project, signals
from sparkenv.environment import profiles
from sparkenv.lock import inputs as inputs_mod
from sparkenv.lock import spawn_cache, timeline, uvdriver
from sparkenv.lock.plan import Plan, reads_from, remember, say
from sparkenv.lock.preferences import KEEP, Upgrade
from sparkenv.lock.uvdriver import IndexOptions, Stage

if TYPE_CHECKING:
    # what judges (the rules, the report) is imported once uv has started: only uv's command is
    # needed before (the report, the policy, the credentials are imported after uv's spawn)
    pass


def digests_now(entry: Any) -> dict[str, Any]:
    """The sha256 of each index page a kept judgement rests on as the index serves it now, known as the
    full judgement knows it (resolve/page_cache.digest_now: fresh, a 304, the same bytes), by URL. Two
    connections, not one per page: each TLS handshake costs CPU that slows the uv running beside these
    checks, and a handful of small pages is read long before uv is done (benchmarks/README.md)."""
    from sparkenv.index import pages as page_cache

    return page_cache.digests_now(sorted({url for url, _ in entry.pages.values()}), readers=2)


@dataclass
class Resolution:
    """What the resolution step hands on: uv's pylock text (redacted), the packages uv could not build,
    and the reads started while uv ran (index pages of the declared names, the early reads of uv's picks)."""

    text: str = ""
    failures: list[uvdriver.Failed] = field(default_factory=list)
    pages: dict[str, Any] = field(default_factory=dict)
    early: Any = None  # resolve.early.EarlyReads
    # what a kept judgement's key before uv is made of, less the lock replaced and --upgrade
    # (lock/judged_cache.py); and that key
    before_uv: tuple[Any, ...] = ()
    before_key: str = ""
    expected: str = ""  # the judgement's key expected before uv, when there was one
    digests: dict[str, Any] = field(default_factory=dict)  # its pages' sha256 now, by URL (futures)
    kept: bool = False  # this lock's judgement was kept for the next one

    def settle(self, raw: dict[str, dict[str, Any]]) -> None:
        """Wait for the early reads of the files the lock holds; their answers are in the caches now."""
        if self.early is not None:
            from sparkenv.lock.resolved import refs

            self.early.settle({r.filename: r.sha256 for r in refs(raw)})

    def drop(self) -> None:
        """The judgement is kept from an earlier lock: the early reads are not waited for."""
        if self.early is not None:
            self.early.close()


def begin(
    plan: Plan, upgrade: Upgrade, cached: spawn_cache.Cached | None, timeout: float
) -> Resolving | None:
    """uv started on the plan (the early uv of `cached` kept when its command is this one), the index's
    credentials remembered for sparkenv's own requests, and the reads beside uv started; None when there
    is nothing to resolve. On any way out of here uv is stopped and its folder removed."""
    uv = None
    try:
        if plan.stage is not None:
            prefer = previous_lock(plan.lock_paths[0], upgrade)
            early = cached.early if cached is not None else None
            uv = Resolving(
                plan.profile, plan.index, plan.stage, plan.excluded, plan.exclude_newer, prefer, early
            )
            uv.start(timeout)
            if cached is not None:
                keep_command(cached, uv, plan.paths, plan.inp, plan.profile, plan.lock_paths[0], upgrade)
        remember(plan.index)  # before sparkenv's own first request
        if uv is not None:
            uv.read_beside(plan.inp)
            timeline.mark("reads beside started")
        return uv
    except BaseException as exc:
        if uv is not None:
            if isinstance(exc, KeyboardInterrupt):  # Ctrl-C, SIGTERM, SIGHUP: the closing line says so
                uv.interrupted()
            uv.close()
        raise


MAX_BUILD_FAILURES = 5


class Resolving:
    """uv's resolution under way, in a work folder of its own, with sparkenv's reads beside it. `start`
    spawns uv; `finish` waits for its answer, resolving again around each package uv cannot build (up to
    MAX_BUILD_FAILURES times, so that every other finding can still be made); `close`, on every way out,
    kills a uv still running and removes the work folder. uv's own words go to stderr only under
    SPARKENV_DEBUG=1."""

    def __init__(
        self,
        profile: profiles.Profile,
        index: IndexOptions,
        stage: Stage,
        excluded: list[str],
        exclude_newer: str | None,
        prefer: tuple[Path | None, Upgrade, str] = (None, KEEP, ""),
        early: spawn_cache.Early | None = None,
    ) -> None:
        self.profile, self.index, self.stage, self.exclude_newer = profile, index, stage, exclude_newer
        self.previous, self.upgrade, self.keeping = prefer
        self.skip = list(excluded)
        self.early = early
        self.work = early.work if early is not None else spawn_cache.work_folder()
        self.out = Resolution()
        self.running: uvdriver.Running | None = None
        self.done = False
        self.kept = False  # the uv started from the spawn cache was the right one
        self.auth: dict[str, str] = {}
        self.spawned: tuple[list[str], dict[str, str]] = ([], {})  # the first spawn's command and files

    def start(self, timeout: float) -> None:
        self.timeout = timeout
        if self.early is not None:
            kept = self._claim(self.early)
            if not kept:
                self.early.discard()
            self.early = None
            if kept:
                return
            self.work = spawn_cache.work_folder()
        self.auth = uvdriver.netrc_env(self.work, self.index)  # a credential only pip's variables hold
        self._spawn()

    def _jobs(self) -> tuple[list[tuple[Stage, list[str], Path]], dict[str, str]]:
        return uvdriver.plan(
            self.work, self.profile, self.index, [self.stage], self.skip, self.exclude_newer,
            self.previous, self.upgrade,
        )  # fmt: skip

    def _claim(self, early: spawn_cache.Early) -> bool:
        """The uv started from the spawn cache is kept when its command and files are the ones computed
        now, byte for byte; otherwise the caller kills it and starts the right one."""
        jobs, files = self._jobs()
        if len(jobs) != 1 or not early.matches(jobs[0][1], files, uvdriver.needs_netrc(self.index)):
            timeline.mark("spawn cache: uv replaced")
            return False
        self.auth = {}
        self.spawned = (jobs[0][1], files)
        self.running = early.claim(jobs[0][0], uvdriver.error)
        self.kept = True
        timeline.mark("spawn cache: uv kept")
        return True

    def _spawn(self) -> None:
        jobs, files = self._jobs()
        uvdriver.write(self.work, files)
        self.running = uvdriver.start(jobs[0], self.timeout, self.auth, log=True)
        if not self.spawned[0]:
            self.spawned = (jobs[0][1], files)
        if self.out.early is not None:
            self.running.read_log(self.out.early.line)

    def read_beside(self, inp: inputs_mod.Inputs) -> None:
        """What runs while uv resolves: the early reads of its picks (fed by its log), the index pages of
        the declared names (for old fallbacks), the imports and data files that judge its answer. When
        the last lock with the same inputs, options and lock to replace came to a judgement that was
        kept (lock/judged_cache.py), uv is expected to answer as it did then: only the index pages
        that judgement rests on are read, and the imports that take it."""
        from sparkenv.lock import judged_cache

        reads = reads_from(self.index)
        self.out.before_uv = (
            judged_cache.code_stamp(), inp, self.profile, self.index, judged_cache.reads_stamp(reads),
            self.stage, list(self.skip), self.exclude_newer,
        )  # fmt: skip
        previous = judged_cache.file_sha256(self.previous)
        self.out.before_key = judged_cache.key("before uv", *self.out.before_uv, previous, self.upgrade)
        expected = judged_cache.predicted(self.out.before_key)
        assert self.running is not None
        if expected is not None:
            timeline.mark("kept judgement expected")
            self.running.read_log(_ignore)  # drained all the same: a full pipe would stop uv
            self.out.expected, entry = expected
            self.out.digests = digests_now(entry)
            _head_start(full=False)
            return
        from sparkenv.lock import early, fallbacks, resolved

        self.out.early = early.EarlyReads(reads)
        self.running.read_log(self.out.early.line)
        self.out.pages = fallbacks.prefetch(reads, sorted(resolved.fallback_roots(inp, self.profile)))
        _head_start()

    def finish(self, progress: bool) -> Resolution:
        if self.keeping:
            say(progress, self.keeping)
        say(
            progress,
            f"resolving {len(self.stage.lines)} requirement(s) with uv for {self.profile.describe()} …",
        )
        while True:
            assert self.running is not None
            try:
                from sparkenv.core.redact import redact

                # uv may copy an index's user-info into file URLs: the lock keeps none
                self.out.text = redact(self.running.result())
                self.done = True
                return self.out
            except uvdriver.Failed as bf:
                if os.environ.get("SPARKENV_DEBUG"):
                    from sparkenv.core.redact import redact

                    print(redact(bf.raw), file=sys.stderr, flush=True)
                if isinstance(bf, uvdriver.BuildFailed) and (
                    bf.key in self.skip or len(self.out.failures) >= MAX_BUILD_FAILURES
                ):
                    raise
                if bf.key not in self.skip:
                    self.out.failures.append(bf)
                # uv's words name no one package to resolve without (or one already left out), or enough
                # were left out: the findings so far are the answer, and no lock is written
                if not bf.key or bf.key in self.skip or len(self.out.failures) > MAX_BUILD_FAILURES:
                    self.done = True
                    return self.out
                self.skip.append(bf.key)
                self._spawn()
                if self.out.early is None:
                    self.running.read_log(_ignore)

    def interrupted(self) -> None:
        """Stopped by Ctrl-C or a signal: uv killed, the folder removed, and the closing line says so."""
        if self.early is not None:  # stopped before the early uv was judged
            self.early.interrupted()
        if self.running is not None:
            uvdriver.stopped([self.running])
        self.close()
        signals.cleaned(f"removed {self.work}")
        signals.cleaned("no lock written")

    def close(self) -> None:
        if self.early is not None:
            self.early.discard()
        if self.running is not None:
            self.running.stop()
        if not self.done and self.out.early is not None:
            self.out.early.close()
        import shutil  # here: its import (with bz2 and lzma) would delay uv's start

        shutil.rmtree(self.work, ignore_errors=True)


def keep_command(
    cached: spawn_cache.Cached,
    uv: Resolving,
    paths: list[str],
    inp: inputs_mod.Inputs,
    profile: profiles.Profile,
    lock: Path,
    upgrade: Upgrade,
) -> None:
    """The command uv was just started with, for the spawn cache, with every file it was computed from:
    the inputs as given and every file read (includes), the profile's file or sparkenv's data, the
    project's pyproject.toml (a profile it may name), the lock being replaced (the preferences), uv."""
    argv, files = uv.spawned
    if not argv or uv.auth:
        return  # uv needed a netrc: a credential, never kept
    deps = [
        *paths, *(str(f) for f in inp.files), *([profile.file] if profile.file else []),
        *spawn_cache.own_files(), str(project.root() / "pyproject.toml"), str(lock), argv[0],
    ]  # fmt: skip
    cached.keep(deps, uv.work, argv, files, lock, upgrade)


def previous_lock(pylock_path: Path, upgrade: Upgrade) -> tuple[Path | None, Upgrade, str]:
    """The lock this one replaces, whose versions are kept where the inputs allow; the progress line."""
    if not pylock_path.is_file():
        return None, upgrade, ""
    if upgrade.all:
        return None, upgrade, f"--upgrade: the versions of {project.from_here(pylock_path)} are not kept"
    moving = f" (except {', '.join(upgrade.packages)})" if upgrade.packages else ""
    return (
        pylock_path,
        upgrade,
        f"keeping the versions of {project.from_here(pylock_path)}{moving} where the inputs allow "
        "(--upgrade: resolve afresh)",
    )


def _ignore(line: str) -> None:
    """uv's resolver log, when nothing reads it."""


def _head_start(full: bool = True) -> None:
    """While uv resolves (seconds, mostly waiting on the index; this process only waits on it), a thread
    imports what will judge its answer — the rules of the resolved set and the lock, the graph, the
    lock's reader and writer — and loads the data files they read. Only a head start: the same imports
    and loaders run again where they are needed (then at no cost), so a failure here changes nothing.
    `full` False: a kept judgement is expected, only what takes it and writes the lock is imported."""
    import threading

    def warm() -> None:
        import contextlib
        import importlib

        with contextlib.suppress(Exception):  # the main thread meets any real error itself
            from sparkenv import knowledge, rules

            if not full:
                for gid in sorted(rules.HAS_STAGE[rules.Stage.LOCKFILE]):
                    rules.module(gid)
                for name in ("sparkenv.core.report", "sparkenv.facts.lockfile"):
                    importlib.import_module(name)
                return
            for gid in sorted(rules.HAS_STAGE[rules.Stage.RESOLVED] | rules.HAS_STAGE[rules.Stage.LOCKFILE]):
                rules.module(gid)
            for name in (
                "sparkenv.facts.graph", "sparkenv.lock.from_uv", "sparkenv.lock.read", "sparkenv.lock.write",
                "sparkenv.lock.lock_files", "sparkenv.lock.wheel_files", "sparkenv.lock.wheel_elf",
                "sparkenv.lock.sdist_scan", "sparkenv.rules.cuda_builds", "packaging.pylock",
            ):  # fmt: skip
                importlib.import_module(name)
            from sparkenv.core import datafiles

            datafiles.parser()
            for load in (knowledge.cuda, knowledge.drivers, knowledge.hosts, knowledge.packages):
                load()

    threading.Thread(target=warm, name="sparkenv-head-start", daemon=True).start()

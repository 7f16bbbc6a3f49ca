"""`sparkenv check` and `sparkenv lock`: gather inputs, resolve with uv, apply the policy, write the lock."""

from __future__ import annotations

import os
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import TYPE_CHECKING, Any

from sparkenv.core import project, signals
from sparkenv.core.errors import SparkenvError
from sparkenv.environment import profiles
from sparkenv.lock import spawn_cache, timeline, uvdriver
from sparkenv.lock import write as lockwrite
from sparkenv.lock.preferences import KEEP, Upgrade
from sparkenv.lock.uvdriver import DEFAULT_TIMEOUT, IndexOptions, Stage
from sparkenv.resolve import inputs as inputs_mod
from sparkenv.resolve.check import named_profile
from sparkenv.resolve.check import profile_for as _profile

if TYPE_CHECKING:
    # what judges (the rules, the report) is imported once uv has started: only uv's command is
    # needed before (the report, the policy, the credentials are imported after uv's spawn)
    from sparkenv.core.report import Finding, Report
    from sparkenv.facts import lockfile as lockstatus
    from sparkenv.facts.resolved import Locked

STAGE_MAIN = "1-packages"
STAGE_UNSLOTH = "2-unsloth"
CACHED = ("cache", "uv's cache")


def _index_urls(inp: inputs_mod.Inputs, index: IndexOptions) -> list[str]:
    return [u for u in (index.index_url, *index.extra_index_urls) if u]


def _index(inp: inputs_mod.Inputs, index_url: str | None, extra: list[str]) -> IndexOptions:
    index = IndexOptions(
        index_url or inp.index_url,
        [*inp.extra_index_urls, *(u for u in extra if u not in inp.extra_index_urls)],
        list(inp.find_links),
    )
    return index


def _remember(index: IndexOptions) -> None:
    """uv gets the URLs as given; sparkenv's own requests find their user-info by realm (never written)."""
    from sparkenv.index import credentials

    credentials.remember([index.index_url, *index.extra_index_urls])


def _reads_from(index: IndexOptions) -> str | None:
    """The index sparkenv's own requests read (pages, metadata): the one uv resolves against."""
    from sparkenv.index import credentials

    return index.index_url or credentials.default_index()


def _declared(
    inp: inputs_mod.Inputs,
    profile: profiles.Profile,
    index: IndexOptions,
    staged: bool,
    offline: bool = False,
    allowed: frozenset[str] = frozenset(),
    expected: bool = False,
) -> list[Finding]:
    """The one judgement of declared requirements that check and lock both make. A lock keeps what it
    found under the rules' facts and sparkenv itself (lock/judged_cache.py: the rules are pure functions
    of both); one that expects a kept judgement of uv's answer (`expected`) takes the kept findings of
    the same facts rather than judging them again beside uv."""
    from sparkenv.lock import judged_cache
    from sparkenv.resolve import policy

    facts = policy.declared_facts(
        inp.requirements, profile, _index_urls(inp, index), staged=staged, offline=offline,
        allow_replace=allowed,
    )  # fmt: skip
    facts_key = judged_cache.key("declared", judged_cache.code_stamp(), facts)
    if expected and (kept := judged_cache.declared(facts_key)) is not None:
        timeline.mark("declared judgement kept")
        return list(kept)
    found = policy.judge_declared(facts)
    if judged_cache.keepable(found):
        judged_cache.keep_declared(facts_key, found)
    return found


def _stages(inp: inputs_mod.Inputs, profile: profiles.Profile) -> tuple[Stage | None, list[Stage]]:
    """One resolution, two install stages.

    Everything is resolved together, the Unsloth family (and any `# sparkenv: no-deps` member) with its
    own requirements, so that the lock is closed: what the family imports is pinned too, at versions the
    family accepts. The family still installs in its own --no-deps stage after the rest."""
    resolve = _resolve_stage(inp, profile)
    return resolve, _install_stages(inp, profile, resolve)


def _resolve_stage(inp: inputs_mod.Inputs, profile: profiles.Profile) -> Stage | None:
    """What uv resolves (its command needs only this, before it starts): the family's data file is read
    only for a requirement whose markers do not hold on the target."""
    lines = [d.text for d in _resolved(inp, profile.marker_env())]
    if not lines:
        return None
    return Stage(STAGE_MAIN, lines, constraints=[d.text for d in inp.requirements if d.constraint])


def _install_stages(inp: inputs_mod.Inputs, profile: profiles.Profile, resolve: Stage | None) -> list[Stage]:
    """The install stages of what uv resolves: a --no-deps stage after the rest when a family member or
    a `# sparkenv: no-deps` member is among its requirements."""
    if resolve is None:
        return []
    fam = _family()
    resolved = _resolved(inp, profile.marker_env())
    late = any(d.key in fam or (d.no_deps and d.key is not None) for d in resolved)
    return [Stage(STAGE_MAIN, resolve.lines), *([Stage(STAGE_UNSLOTH, [], no_deps=True)] if late else [])]


def _resolved(inp: inputs_mod.Inputs, env: dict[str, str]) -> list[Any]:
    """The requirements (not constraints) uv resolves: those whose markers hold on the target, and the
    others too unless they install in the --no-deps stage (the family, `no-deps` members)."""
    fam: set[str] | None = None
    out = []
    for d in inp.requirements:
        if d.constraint:
            continue
        if not d.applies(env):
            if d.no_deps:
                continue
            fam = _family() if fam is None else fam
            if d.key in fam:
                continue
        out.append(d)
    return out


def _family() -> set[str]:
    from sparkenv.rules import unsloth

    return set(unsloth.family())


def _late_keys(inp: inputs_mod.Inputs) -> set[str]:
    """Packages installed in the --no-deps stage: the Unsloth family and `# sparkenv: no-deps` members."""
    fam = _family()
    return {d.key for d in inp.requirements if d.key and not d.constraint and (d.key in fam or d.no_deps)}


def _allowed(names: list[str] | None, profile: profiles.Profile) -> set[str]:
    from packaging.utils import canonicalize_name

    out = set()
    for name in names or []:
        key = canonicalize_name(name)
        provider = profile.provider(key)
        if provider is None:
            raise SparkenvError(
                f"--allow-replace {name}: profile {profile.name} does not provide it "
                f"(it provides {', '.join(profile.provides) or 'nothing'})"
            )
        out |= {key, provider, *(k for k, v in profile.satisfies.items() if v == provider)}
    return out


def _excluded(profile: profiles.Profile, allowed: set[str]) -> list[str]:
    return [n for n in profile.excluded() if n not in allowed]


def _say(progress: bool, line: str) -> None:
    if progress:
        from sparkenv.core.redact import redact

        print(f"sparkenv lock: {redact(line)}", file=sys.stderr, flush=True)


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
    from sparkenv.core import outputs as output_files

    output_files.check_folder(
        str(project.lock_folder(output_dir)), "--output-dir"
    )  # before a long resolution
    timeline.mark("lock started")
    inp = inputs if inputs is not None else inputs_mod.read(paths, extras, groups=groups)
    timeline.mark("inputs read")
    profile = _profile(profile_arg, platform, inp)
    timeline.mark("profile loaded")
    allowed = _allowed(allow_replace, profile)
    index = _index(inp, index_url, extra_index_urls or [])
    lockable = any(d.key or d.url for d in inp.requirements if not d.constraint)
    resolve_stage = _resolve_stage(inp, profile) if lockable else None
    excluded = _excluded(profile, allowed)
    pylock_path, req_path = lockwrite.paths_for(project.lock_folder(output_dir), profile)
    timeline.mark("uv's command known")
    bind = binding or (lambda found: found)
    with signals.raising():  # the CLI's handlers already raise; a library caller's may not
        uv = None
        try:
            if resolve_stage is not None:
                prefer = _previous(pylock_path, upgrade)
                early = cached.early if cached is not None else None
                uv = _Resolving(profile, index, resolve_stage, excluded, exclude_newer, prefer, early)
                uv.start(timeout)
                if cached is not None:
                    _keep_command(cached, uv, paths, inp, profile, pylock_path, upgrade)
            _remember(index)  # before sparkenv's own first request
            stages = _install_stages(inp, profile, resolve_stage)
            if uv is not None:
                uv.read_beside(inp)
                timeline.mark("reads beside started")
            from sparkenv.core.report import Status

            expected = uv is not None and bool(uv.out.expected)
            declared = _declared(inp, profile, index, True, allowed=frozenset(allowed), expected=expected)
            withheld = any(f.status is Status.FAIL for f in bind(declared))
            timeline.mark("declared judged")
            if not withheld and not lockable:
                raise SparkenvError(f"{', '.join(paths)}: no requirement to lock")
            resolution = uv.finish(progress) if uv is not None and not withheld else _Resolution()
        except KeyboardInterrupt:  # Ctrl-C, SIGTERM, SIGHUP: the closing line says what was cleaned
            if uv is not None:
                uv.interrupted()
            raise
        finally:
            if uv is not None:
                uv.close()
    from sparkenv.core import filing

    try:
        return _judged(
            started, paths, inp, profile, index, stages, excluded, allowed, exclude_newer, declared,
            resolution, withheld, (pylock_path, req_path), progress, outputs, bind,
        )  # fmt: skip
    finally:  # the cache files made beside the judgement, on every way out
        filing.wait()


def _judged(
    started: float,
    paths: list[str],
    inp: inputs_mod.Inputs,
    profile: profiles.Profile,
    index: IndexOptions,
    stages: list[Stage],
    excluded: list[str],
    allowed: set[str],
    exclude_newer: str | None,
    declared: list[Finding],
    resolution: _Resolution,
    withheld: bool,
    lock_paths: tuple[Path, Path],
    progress: bool,
    outputs: dict[Path, str] | None,
    bind: Callable[[list[Finding]], list[Finding]],
) -> Report:
    """uv's answer judged with the declared findings; the lock's files rendered when nothing fails.
    `withheld`: a declared FAIL stopped the lock before uv's answer (nothing resolved, nothing written)."""
    from sparkenv.core.report import Report, Status, merge_by_subject
    from sparkenv.facts import lockfile as lockstatus
    from sparkenv.resolve import policy

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
        index, judged_cache.reads_stamp(_reads_from(index)), stages, excluded, sorted(allowed),
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
        _say(progress, f"uv resolved {packages} package(s) as last time: the judgement of then is kept")
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
            from sparkenv.resolve import lock_files

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
    """The key of the lock's files as rendered (resolve/lock_files.render) beside the judgement's: where
    they and the inputs are (paths are written relative to the lock folder), the inputs' bytes (their
    hash is written), the project root a profile file is named from, the options recorded."""
    from sparkenv.lock import judged_cache

    folder = lock_paths[0].parent
    root = project.root(folder) if profile.file else None
    return judged_cache.key(
        "files", judgement, [p.resolve() for p in lock_paths], folder.resolve(),
        [Path(p).resolve() for p in paths], inp.digest(), root, _tool_extra(allowed, exclude_newer),
    )  # fmt: skip


def _kept_judgement(judgement: str, index: IndexOptions, resolution: _Resolution) -> list[Finding] | None:
    """The resolved set's findings kept for this judgement's key (lock/judged_cache.py), when every
    index page they rest on is, asked again now as a full judgement asks it, the same bytes; else None."""
    from sparkenv.lock import judged_cache

    entry = judged_cache.load(judgement)
    if entry is None:
        return None
    # asked while uv resolved when this judgement was expected; else now
    now = resolution.digests if resolution.expected == judgement else _digests_now(entry)
    for url, sha in entry.pages.values():
        try:
            if now[url].result(timeout=30) != sha:
                return None
        except Exception:  # unreadable now: judged afresh, as it would be without the cache
            return None
    return list(entry.findings)


def _digests_now(entry: Any) -> dict[str, Any]:
    """The sha256 of each index page a kept judgement rests on as the index serves it now, known as the
    full judgement knows it (resolve/page_cache.digest_now: fresh, a 304, the same bytes), by URL."""
    from sparkenv.index import pages as page_cache

    return page_cache.digests_now(sorted({url for url, _ in entry.pages.values()}))


def _judge_afresh(
    judgement: str,
    inp: inputs_mod.Inputs,
    profile: profiles.Profile,
    index: IndexOptions,
    allowed: set[str],
    locked: dict[str, Locked],
    raw: dict[str, dict[str, Any]],
    resolution: _Resolution,
    progress: bool,
    took: float,
) -> list[Finding]:
    """The resolved set's findings, read and judged; kept for the next re-lock when complete (every
    read answered, no build failure, no ERROR)."""
    from sparkenv.index import metadata
    from sparkenv.lock import judged_cache, wheel_files
    from sparkenv.resolve import resolved

    _say(progress, f"uv resolved {len(locked)} package(s) in {took:.1f} s; reading their metadata …")
    t_resolved = time.perf_counter()
    resolution.settle(raw)
    timeline.mark("early reads settled")
    # the wheels' file lists first: a wheel's METADATA that came with its central directory
    # (remote_zip.held_dist_info) then needs no request of its own
    so_files = wheel_files.read(resolved.refs(raw))
    metas = metadata.read(resolved.refs(raw), index_url=_reads_from(index))
    timeline.mark("metadata read")
    got = resolved.judged(
        inp, profile, locked, raw, metas, allowed, _reads_from(index), resolution.pages, resolution.failures,
        so_files,
    )  # fmt: skip
    # the time is the whole judgement's (file lists, ELF, RECORDs, sdists, index pages, the rules), not
    # the metadata's alone
    _say(
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


@dataclass
class _Resolution:
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
            from sparkenv.resolve.resolved import refs

            self.early.settle({r.filename: r.sha256 for r in refs(raw)})

    def drop(self) -> None:
        """The judgement is kept from an earlier lock: the early reads are not waited for."""
        if self.early is not None:
            self.early.close()


MAX_BUILD_FAILURES = 5


class _Resolving:
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
        self.out = _Resolution()
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

        reads = _reads_from(self.index)
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
            self.out.digests = _digests_now(entry)
            _head_start(full=False)
            return
        from sparkenv.lock import early, fallbacks
        from sparkenv.resolve import resolved

        self.out.early = early.EarlyReads(reads)
        self.running.read_log(self.out.early.line)
        self.out.pages = fallbacks.prefetch(reads, sorted(resolved.fallback_roots(inp, self.profile)))
        _head_start()

    def finish(self, progress: bool) -> _Resolution:
        if self.keeping:
            _say(progress, self.keeping)
        _say(
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


def _keep_command(
    cached: spawn_cache.Cached,
    uv: _Resolving,
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


def _previous(pylock_path: Path, upgrade: Upgrade) -> tuple[Path | None, Upgrade, str]:
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


def _locked(
    text: str, inp: inputs_mod.Inputs, stages: list[Stage]
) -> tuple[dict[str, Locked], dict[str, dict[str, Any]]]:
    """uv's answer as the lock's packages, each in its install stage (a --no-deps stage added when a
    dependency brought a late member in)."""
    from sparkenv.lock import from_uv

    late = _late_keys(inp)
    locked, raw = from_uv.packages(text, late | _family(), STAGE_MAIN, STAGE_UNSLOTH) if text else ({}, {})
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
                "sparkenv.resolve.lock_files", "sparkenv.lock.wheel_files", "sparkenv.lock.wheel_elf",
                "sparkenv.lock.sdist_scan", "sparkenv.rules.cuda_builds", "packaging.pylock",
            ):  # fmt: skip
                importlib.import_module(name)
            from sparkenv.core import datafiles

            datafiles.parser()
            for load in (knowledge.cuda, knowledge.drivers, knowledge.hosts, knowledge.packages):
                load()

    threading.Thread(target=warm, name="sparkenv-head-start", daemon=True).start()


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
    from sparkenv.lock import profile as lockprofile
    from sparkenv.lock import read as lockread
    from sparkenv.resolve import policy
    from sparkenv.resolve.lock_files import relative

    out_dir = project.lock_folder(output_dir)
    checked: list[lockstatus.Currency] = []
    profile_name = None
    if paths:
        inp = inputs_mod.read(paths, extras)
        profile = _profile(profile_arg, platform, inp)
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

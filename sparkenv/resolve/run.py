"""`sparkenv check` and `sparkenv lock`: gather inputs, resolve with uv, apply the policy, write the lock."""

from __future__ import annotations

import os
import shutil
import sys
import tempfile
import time
from collections.abc import Callable
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

from packaging.requirements import InvalidRequirement, Requirement
from packaging.utils import canonicalize_name

from sparkenv import confine, credentials, profiles, project, signals
from sparkenv.errors import SparkenvError
from sparkenv.facts import lockfile as lockstatus
from sparkenv.facts.lock import FORMAT
from sparkenv.facts.resolved import BuildFailure, Locked, MetadataProblem, SdistBuild
from sparkenv.lock import from_uv
from sparkenv.lock import profile as lockprofile
from sparkenv.lock import read as lockread
from sparkenv.lock import write as lockwrite
from sparkenv.redact import redact
from sparkenv.report import Finding, Report, Status, merge_by_subject
from sparkenv.resolve import inputs as inputs_mod
from sparkenv.resolve import metadata, policy, uvdriver
from sparkenv.resolve.check import check  # noqa: F401 - where callers have found it
from sparkenv.resolve.check import profile_for as _profile
from sparkenv.resolve.preferences import KEEP, Upgrade
from sparkenv.resolve.uvdriver import DEFAULT_TIMEOUT, IndexOptions, Stage

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
    # uv gets the URLs as given; sparkenv's own requests find their user-info by realm (never written)
    credentials.remember([index.index_url, *index.extra_index_urls])
    return index


def _reads_from(index: IndexOptions) -> str | None:
    """The index sparkenv's own requests read (pages, metadata): the one uv resolves against."""
    return index.index_url or credentials.default_index()


def _declared(
    inp: inputs_mod.Inputs,
    profile: profiles.Profile,
    index: IndexOptions,
    staged: bool,
    offline: bool = False,
    allowed: frozenset[str] = frozenset(),
) -> list[Finding]:
    """The one judgement of declared requirements that check and lock both make."""
    return policy.check_declared(
        inp.requirements,
        profile,
        _index_urls(inp, index),
        staged=staged,
        offline=offline,
        allow_replace=allowed,
    )


def _stages(inp: inputs_mod.Inputs, profile: profiles.Profile) -> tuple[Stage | None, list[Stage]]:
    """One resolution, two install stages.

    Everything is resolved together, the Unsloth family (and any `# sparkenv: no-deps` member) with its
    own requirements, so that the lock is closed: what the family imports is pinned too, at versions the
    family accepts. The family still installs in its own --no-deps stage after the rest."""
    env = profile.marker_env()
    lines, constraints, late = [], [], False
    for d in inp.requirements:
        if d.constraint:
            constraints.append(d.text)
        elif d.applies(env) or not (d.key in _family() or d.no_deps):
            lines.append(d.text)
            late = late or (d.key in _family() or (d.no_deps and d.key is not None))
    if not lines:
        return None, []
    stages = [Stage(STAGE_MAIN, lines)]
    if late:
        stages.append(Stage(STAGE_UNSLOTH, [], no_deps=True))
    return Stage(STAGE_MAIN, lines, constraints=constraints), stages


def _family() -> set[str]:
    from sparkenv.rules import unsloth

    return set(unsloth.family())


def _late_keys(inp: inputs_mod.Inputs) -> set[str]:
    """Packages installed in the --no-deps stage: the Unsloth family and `# sparkenv: no-deps` members."""
    fam = _family()
    return {d.key for d in inp.requirements if d.key and not d.constraint and (d.key in fam or d.no_deps)}


def _refs(raw: dict[str, dict[str, Any]]) -> list[metadata.FileRef]:
    """The file whose metadata stands for each package: its first wheel, else its sdist."""
    out = []
    for key, entry in raw.items():
        files = entry.get("wheels") or ([entry["sdist"]] if "sdist" in entry else [])
        if files:
            f = files[0]
            out.append(metadata.FileRef(key, f["url"].rsplit("/", 1)[-1], f["url"], f["hashes"]["sha256"]))
    return out


def _allowed(names: list[str] | None, profile: profiles.Profile) -> set[str]:
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


def _root_extras(inp: inputs_mod.Inputs, env: dict[str, str]) -> dict[str, set[str]]:
    out: dict[str, set[str]] = {}
    for d in inp.requirements:
        if d.key and not d.constraint and d.applies(env):
            try:
                extras = Requirement(d.text).extras
            except InvalidRequirement:
                extras = set()
            out.setdefault(d.key, set()).update(canonicalize_name(x) for x in extras)
    return out


def _fallbacks(
    inp: inputs_mod.Inputs,
    profile: profiles.Profile,
    locked: dict[str, Locked],
    raw: dict[str, dict[str, Any]],
    edges: list,  # type: ignore[type-arg]
    chain: dict[str, list[str]],
    index_url: str | None,
    prefetched: dict[str, Any] | None = None,
) -> list:  # type: ignore[type-arg]
    """Declared requirements not pinned exactly, and sdist-only picks: what the index says of them."""
    from sparkenv.resolve import fallbacks

    env = profile.marker_env()
    keys = _fallback_roots(inp, profile) | {k for k, p in locked.items() if p.sdist and not p.wheels}
    candidates = {}
    for key in sorted(keys & set(locked)):
        files = raw[key].get("wheels") or ([raw[key]["sdist"]] if "sdist" in raw[key] else [])
        candidates[key] = (locked[key].version, files[0].get("upload-time") if files else None)
    declared = fallbacks.declared_specifiers(inp.requirements, env)
    versions = {k: p.version for k, p in locked.items()}
    pre = {k: f for k, f in (prefetched or {}).items() if k in candidates}
    return fallbacks.gather(candidates, declared, edges, chain, profile, index_url, versions, pre)


def _fallback_roots(inp: inputs_mod.Inputs, profile: profiles.Profile) -> set[str]:
    """Declared requirements not pinned exactly: the names whose locked version may be a fallback."""
    env = profile.marker_env()
    exact = {d.key for d in inp.requirements if d.key and d.exact}
    # what the base provides is not resolved: no fallback to look for
    return {
        d.key
        for d in inp.requirements
        if d.key and not d.constraint and d.applies(env) and profile.provider(d.key) is None
    } - exact


def _say(progress: bool, line: str) -> None:
    if progress:
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
) -> Report:
    """Resolve, check, and write the lock when nothing fails. With `outputs` given, the lock's two files
    are put there instead of written, so the caller can write them together with its reports (all or
    nothing). `binding` gives the findings as the user will see them (--select/--ignore, waivers): the
    write is decided on those, so `verdict: ready` always means the lock was written, and a FAIL the user
    ignored or waived does not withhold it. A lock already at the output path gives uv its versions as
    preferences (resolve/preferences.py) unless `upgrade` says otherwise."""

    started = time.perf_counter()
    from sparkenv import outputs as output_files

    output_files.check_folder(
        str(project.lock_folder(output_dir)), "--output-dir"
    )  # before a long resolution
    inp = inputs_mod.read(paths, extras, groups=groups)
    profile = _profile(profile_arg, platform, inp)
    allowed = _allowed(allow_replace, profile)
    index = _index(inp, index_url, extra_index_urls or [])
    declared = _declared(inp, profile, index, staged=True, allowed=frozenset(allowed))
    target = f"{' '.join(paths)} → {profile.python_platform}"
    pylock_path, req_path = lockwrite.paths_for(project.lock_folder(output_dir), profile)
    shown = (project.from_here(pylock_path), project.from_here(req_path))
    bind = binding or (lambda found: found)
    if any(f.status is Status.FAIL for f in bind(declared)):
        outcome = lockstatus.Outcome(*shown, inputs_fail=True)
        findings = [*declared, *policy.check_lockfile(lockstatus.LockFileFacts(outcome=outcome))]
        return Report("lock", target, merge_by_subject(findings), profile=profile.name)
    if not any(d.key or d.url for d in inp.requirements if not d.constraint):
        raise SparkenvError(f"{', '.join(paths)}: no requirement to lock")
    resolve_stage, stages = _stages(inp, profile)
    excluded = _excluded(profile, allowed)
    resolution = _Resolution()
    if resolve_stage is not None:
        previous = _previous(pylock_path, upgrade, progress)
        prefer = (previous, upgrade)
        resolution = _resolve(
            inp, profile, index, resolve_stage, excluded, exclude_newer, timeout, progress, prefer
        )
    locked, raw = _locked(resolution.text, inp, stages)
    t_resolved = time.perf_counter()
    _say(
        progress,
        f"uv resolved {len(locked)} package(s) in {t_resolved - started:.1f} s; reading their metadata …",
    )
    resolution.settle(raw)
    metas = metadata.read(_refs(raw), index_url=_reads_from(index))
    resolved = _resolved_findings(
        inp, profile, locked, raw, metas, allowed, _reads_from(index), resolution.pages, resolution.failures
    )
    findings = [*declared, *resolved]
    _say(
        progress,
        f"read the metadata of {len(metas)} file(s) in {time.perf_counter() - t_resolved:.1f} s "
        f"({sum(1 for m in metas.values() if isinstance(m, metadata.Metadata) and m.via in CACHED)} from "
        "caches)",
    )
    outcome = lockstatus.Outcome(
        *shown,
        # a package uv could not build is missing from the set: no lock, whatever is ignored or waived
        fails=sum(1 for f in bind(findings) if f.status is Status.FAIL) + len(resolution.failures),
        unknown=sum(1 for f in bind(findings) if f.status is Status.ERROR),
        packages=len(locked),
        stages=len(stages),
    )
    verdict = policy.check_lockfile(lockstatus.LockFileFacts(outcome=outcome))
    if all(f.status is Status.PASS for f in verdict):  # the registry's go-ahead: write it
        files = _render(
            pylock_path, req_path, profile, inp, index, stages, raw, paths, excluded,
            _tool_extra(allowed, exclude_newer),
        )  # fmt: skip
        if outputs is None:
            lockwrite.write_pair(files)
        else:
            outputs.update(files)
    findings += verdict
    report = Report("lock", target, merge_by_subject(findings), profile=profile.name)
    report.context = {
        "python_platform": profile.python_platform,
        "python": profile.python_minor,
        "packages": len(locked),
        "excluded": excluded,
        "seconds": round(time.perf_counter() - started, 3),
    }
    return report


@dataclass
class _Resolution:
    """What the resolution step hands on: uv's pylock text (redacted), the packages uv could not build,
    and the reads started while uv ran (index pages of the declared names, the early reads of uv's picks)."""

    text: str = ""
    failures: list[uvdriver.BuildFailed] = field(default_factory=list)
    pages: dict[str, Any] = field(default_factory=dict)
    early: Any = None  # resolve.early.EarlyReads

    def settle(self, raw: dict[str, dict[str, Any]]) -> None:
        """Wait for the early reads of the files the lock holds; their answers are in the caches now."""
        if self.early is not None:
            self.early.settle({r.filename: r.sha256 for r in _refs(raw)})


def _resolve(
    inp: inputs_mod.Inputs,
    profile: profiles.Profile,
    index: IndexOptions,
    stage: Stage,
    excluded: list[str],
    exclude_newer: str | None,
    timeout: float,
    progress: bool,
    prefer: tuple[Path | None, Upgrade] = (None, KEEP),
) -> _Resolution:
    """uv's resolution, with sparkenv's reads started beside it; the work folder is removed on every exit."""
    from sparkenv.resolve import early, fallbacks

    _say(progress, f"resolving {len(stage.lines)} requirement(s) with uv for {profile.describe()} …")
    work = tempfile.mkdtemp(prefix="sparkenv-lock-")
    out = _Resolution()
    # index pages of the declared names (for old fallbacks) are read while uv resolves
    out.pages = fallbacks.prefetch(_reads_from(index), sorted(_fallback_roots(inp, profile)))
    out.early = early.EarlyReads(_reads_from(index))
    _head_start()
    try:
        with signals.raising():  # the CLI's handlers already raise; a library caller's may not
            # uv may copy an index's user-info into file URLs: the lock keeps none
            out.text = redact(
                _resolve_around_failures(
                    Path(work), profile, index, stage, excluded, exclude_newer, timeout, out.failures,
                    out.early.line, prefer,
                )
            )  # fmt: skip
    except KeyboardInterrupt:  # Ctrl-C, SIGTERM, SIGHUP: the closing line says what was cleaned
        out.early.close()
        shutil.rmtree(work, ignore_errors=True)
        signals.cleaned(f"removed {work}")
        signals.cleaned("no lock written")
        raise
    except BaseException:
        out.early.close()
        raise
    finally:
        shutil.rmtree(work, ignore_errors=True)
    return out


def _previous(pylock_path: Path, upgrade: Upgrade, progress: bool) -> Path | None:
    """The lock this one replaces, whose versions are kept where the inputs allow."""
    if not pylock_path.is_file():
        return None
    if upgrade.all:
        _say(progress, f"--upgrade: the versions of {project.from_here(pylock_path)} are not kept")
        return None
    moving = f" (except {', '.join(upgrade.packages)})" if upgrade.packages else ""
    _say(
        progress,
        f"keeping the versions of {project.from_here(pylock_path)}{moving} where the inputs allow "
        "(--upgrade: resolve afresh)",
    )
    return pylock_path


def _locked(
    text: str, inp: inputs_mod.Inputs, stages: list[Stage]
) -> tuple[dict[str, Locked], dict[str, dict[str, Any]]]:
    """uv's answer as the lock's packages, each in its install stage (a --no-deps stage added when a
    dependency brought a late member in)."""
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


def _head_start() -> None:
    """While uv resolves (seconds, mostly waiting on the index; this process only waits on it), a thread
    imports what will judge its answer — the rules of the resolved set and the lock, the graph, the
    lock's reader and writer — and loads the data files they read. Only a head start: the same imports
    and loaders run again where they are needed (then at no cost), so a failure here changes nothing."""
    import threading

    def warm() -> None:
        import contextlib
        import importlib

        with contextlib.suppress(Exception):  # the main thread meets any real error itself
            from sparkenv import knowledge, rules

            for gid in sorted(rules.HAS_STAGE[rules.Stage.RESOLVED] | rules.HAS_STAGE[rules.Stage.LOCKFILE]):
                rules.module(gid)
            for name in ("sparkenv.facts.graph", "sparkenv.lock.read", "sparkenv.lock.write", "tomllib"):
                importlib.import_module(name)
            for load in (knowledge.cuda, knowledge.drivers, knowledge.hosts, knowledge.packages):
                load()

    threading.Thread(target=warm, name="sparkenv-head-start", daemon=True).start()


def _requirements_of(
    locked: dict[str, Locked], metas: dict[str, metadata.Metadata | str]
) -> tuple[dict[str, Any], list[MetadataProblem]]:
    """Each locked package's Requires-Dist (set on it too), and what could not be read or parsed."""
    problems: list[MetadataProblem] = []
    requires = {}
    for key, meta in sorted(metas.items()):
        pkg = locked[key]
        fname = (pkg.wheels or [pkg.sdist or key])[0]
        if isinstance(meta, str):
            problems.append(MetadataProblem(key, pkg.version, fname, reason=meta))
            continue
        pkg.requires = meta.requires
        requires[key] = meta.requires
        if meta.invalid:
            problems.append(MetadataProblem(key, pkg.version, fname, invalid=tuple(meta.invalid)))
    return requires, problems


def _requirements_of_failed(
    failures: list[uvdriver.BuildFailed], index_url: str | None, requires: dict[str, Any]
) -> tuple[list[Any], list[metadata.FileRef]]:
    """What uv could not build or fetch; the requirements of each still count (a torch pin, a base
    conflict), added to `requires`."""
    failed, failed_refs = _failed(failures, index_url)
    for key, meta in metadata.read(failed_refs, index_url=index_url).items():
        if isinstance(meta, metadata.Metadata):
            requires[key] = meta.requires
    return failed, failed_refs


def _records_to_read(
    raw: dict[str, dict[str, Any]], locked: dict[str, Locked], edges: list[Any], base_versions: dict[str, str]
) -> dict[str, Any]:
    """The RECORD of CUDA-capable members whose metadata shows no CUDA (only their wheels say)."""
    from sparkenv.rules import cuda_builds

    verdicts = cuda_builds.evidence({k: p.version for k, p in locked.items()}, edges, base_versions)
    fams = cuda_builds.families()
    unknown = [
        r for r in _refs(raw) if verdicts.get(r.key, "") is None and r.is_wheel and fams[r.key].conclusive
    ]
    return metadata.records(unknown)


def _wheel_reads(
    raw: dict[str, dict[str, Any]], locked: dict[str, Locked], edges: list[Any]
) -> tuple[Any, Any]:
    """Every binary wheel's file list, and the ELF of the GPU packages' shared objects."""
    from sparkenv.resolve import wheel_elf, wheel_files

    so_files = wheel_files.read(_refs(raw))
    gpu_refs = [r for r in _refs(raw) if r.key in _gpu_packages(locked, edges, so_files)]
    shared = {k: wheel_files.shared_objects(v) for k, v in so_files.items() if isinstance(v, tuple)}
    return so_files, wheel_elf.read(gpu_refs, shared)


def _resolved_findings(
    inp: inputs_mod.Inputs,
    profile: profiles.Profile,
    locked: dict[str, Locked],
    raw: dict[str, dict[str, Any]],
    metas: dict[str, metadata.Metadata | str],
    allowed: set[str],
    index_url: str | None = None,
    prefetched: dict[str, Any] | None = None,
    failures: list[uvdriver.BuildFailed] | None = None,
) -> list[Finding]:
    from sparkenv.facts import graph

    env = profile.marker_env()
    requires, problems = _requirements_of(locked, metas)
    failed, failed_refs = _requirements_of_failed(failures or [], index_url, requires)
    sdist_refs = [r for r in _refs(raw) if not r.is_wheel and not locked[r.key].wheels] + failed_refs
    roots = [d.key for d in inp.requirements if d.key and not d.constraint]
    root_extras = _root_extras(inp, env)
    edges = graph.edges(requires, env, root_extras)
    chain = graph.chains(locked, edges, roots, root_extras)
    kept_out = [n for n in profile.excluded() if n not in allowed]
    base_versions = {k: profile.provides[p] for k in kept_out if (p := profile.provider(k))}
    so_files, elves = _wheel_reads(raw, locked, edges)
    return policy.check_resolved(
        locked,
        roots,
        profile,
        None,
        kept_out,
        edges=tuple(edges),
        allow_replace=frozenset(allowed),
        records=_records_to_read(raw, locked, edges, base_versions),
        fallbacks=tuple(_fallbacks(inp, profile, locked, raw, edges, chain, index_url, prefetched)),
        metadata_problems=tuple(problems),
        sdist_builds=_sdist_builds(sdist_refs),
        wheel_files=so_files,
        wheel_elves=elves,
        build_failures=tuple(failed),
        root_extras=root_extras,
    )


def _gpu_packages(locked: dict[str, Locked], edges: list, so_files: dict[str, Any]) -> set[str]:  # type: ignore[type-arg]
    """Whose shared objects' ELF to read: wheels with native code that require torch or a CUDA library
    (extensions built against them), or that ship GPU code (CUDA sources, headers, cubins). Not the CUDA
    libraries themselves (their name or version says their major), nor torch's family (its metadata
    says whether it is a CUDA build)."""
    from sparkenv.cuda import rules as cuda_rules
    from sparkenv.resolve import wheel_files
    from sparkenv.rules import cuda_builds, cuda_major, cuda_per_release

    fams = cuda_builds.families()
    gpu = {e.source for e in edges if e.target == "torch" or cuda_rules.is_cuda_relevant(e.target)}
    return {
        k
        for k in locked
        if isinstance(so_files.get(k), tuple)
        and so_files[k]
        and (k in gpu or cuda_rules.is_cuda_relevant(k) or wheel_files.ships_gpu_code(so_files[k]))
        and not any(e.major for e in cuda_major.name_version_evidence(k, locked[k].version))
        and k not in fams
        and not cuda_per_release.libraries(so_files[k])  # judged by which one it carries
    }


def _sdist_builds(refs: list[metadata.FileRef]) -> dict[str, SdistBuild]:
    """What each sdist compiles, read from the sdist; packages.toml's known answers (rules/g2.sdist_build)
    need no download."""
    from sparkenv.knowledge import packages
    from sparkenv.resolve import sdist_scan

    known = packages().compiles_cuda
    return sdist_scan.scan([r for r in refs if r.key not in known])


def _failed(
    failures: list[uvdriver.BuildFailed], index_url: str | None
) -> tuple[list[BuildFailure], list[metadata.FileRef]]:
    """Each package uv could not build, with its sdist on the index (to read what it builds and needs)."""
    from packaging.version import InvalidVersion, Version

    from sparkenv.resolve import fallbacks

    out, refs = [], []
    for bf in failures:
        sdist = None
        releases = fallbacks.releases(index_url, bf.key) if bf.version else None
        try:
            rel = (releases or {}).get(Version(bf.version)) if bf.version else None
        except InvalidVersion:
            rel = None
        for name in rel.files if rel else []:
            if not name.endswith(".whl") and rel is not None and rel.urls.get(name):
                sdist = name
                refs.append(metadata.FileRef(bf.key, name, rel.urls[name], ""))
                break
        out.append(BuildFailure(bf.key, bf.version, bf.action, bf.cause, sdist, bf.index))
    return out, refs


MAX_BUILD_FAILURES = 5


def _resolve_around_failures(
    work: Path,
    profile: profiles.Profile,
    index: IndexOptions,
    stage: Stage,
    excluded: list[str],
    exclude_newer: str | None,
    timeout: float,
    failures: list[uvdriver.BuildFailed],
    on_log: Callable[[str], None] | None = None,
    prefer: tuple[Path | None, Upgrade] = (None, KEEP),
) -> str:
    """uv stops at the first package it cannot build; that package is kept out and the rest resolved
    again (up to MAX_BUILD_FAILURES times), so that every other finding can still be made. uv's own
    words go to stderr only under SPARKENV_DEBUG=1."""
    skip = list(excluded)
    auth = uvdriver.netrc_env(work, index)  # a credential only pip's variables hold, for uv
    while True:
        jobs = uvdriver.prepare(work, profile, index, [stage], skip, exclude_newer, *prefer)
        try:
            return uvdriver.run_all(jobs, timeout, auth, on_log)[stage.name]
        except uvdriver.BuildFailed as bf:
            if os.environ.get("SPARKENV_DEBUG"):
                print(redact(bf.raw), file=sys.stderr, flush=True)
            if bf.key in skip or len(failures) >= MAX_BUILD_FAILURES:
                raise
            failures.append(bf)
            skip.append(bf.key)


def _rel(path: Path, out_dir: Path) -> str:
    return os.path.relpath(path.resolve(), out_dir.resolve())


def _render(
    pylock_path: Path,
    req_path: Path,
    profile: profiles.Profile,
    inp: inputs_mod.Inputs,
    index: IndexOptions,
    stages: list[Stage],
    raw: dict[str, dict[str, Any]],
    paths: list[str],
    excluded: list[str],
    extra_tool: dict[str, Any],
) -> dict[Path, str]:
    out_dir = pylock_path.parent
    order = {s.name: i for i, s in enumerate(stages)}
    packages = sorted(raw.values(), key=lambda p: (order[p["tool"]["sparkenv"]["stage"]], p["name"]))
    tool: dict[str, Any] = {
        "format": FORMAT,
        **lockprofile.recorded(profile, out_dir),
        "image": profile.image,
        "digest": profile.digest,
        "platform": profile.platform,
        "python-platform": profile.python_platform,
        "inputs": [_rel(Path(p), out_dir) for p in paths],
        "input-hash": inp.digest(),
        "excluded": excluded,
        **extra_tool,
        "stages": [s.name for s in stages],
        "no-deps-stages": [s.name for s in stages if s.no_deps],
        "requirements": req_path.name,
    }
    # recorded without user-info: an install finds the credential where pip and uv read it (netrc, env)
    if index.index_url:
        tool["index-url"] = redact(index.index_url)
    if index.extra_index_urls:
        tool["extra-index-urls"] = [redact(u) for u in index.extra_index_urls]
    env = f"sys_platform == 'linux' and platform_machine == '{profile.machine}'"
    text = lockwrite.render_pylock(packages, tool, f"=={profile.python_minor}.*", env)
    written = lockread.from_text(text, pylock_path)  # read back as every reader will: the requirements follow
    base = f"{profile.image}@{profile.digest}" if profile.digest else (profile.image or "no base image")
    header = [
        f"Written by `sparkenv lock` for profile {profile.name} ({base}), {profile.python_platform}, "
        f"Python {profile.python_minor}.",
        f"input-hash: {tool['input-hash']}  inputs: {', '.join(tool['inputs'])}",
        "Every dependency is pinned here; what the base provides is left alone: "
        + (", ".join(excluded) or "nothing"),
        f"Install: pip install --no-deps --require-hashes -r {req_path.name}",
        "(or one stage at a time, in order, each with --no-deps)",
    ]
    req_text = lockwrite.render_requirements(written, header)
    return {pylock_path: text, req_path: req_text}


def lock_check(
    paths: list[str],
    profile_arg: str | None,
    platform: str | None,
    output_dir: str | None,
    extras: list[str] | None = None,
) -> Report:
    """Is each lock current with its inputs? Offline: compares the recorded input and profile hashes."""
    out_dir = project.lock_folder(output_dir)
    checked: list[lockstatus.Currency] = []
    profile_name = None
    if paths:
        inp = inputs_mod.read(paths, extras)
        profile = _profile(profile_arg, platform, inp)
        profile_name = profile.name
        pylock_path, _ = lockwrite.paths_for(out_dir, profile)
        checked.append(_currency(pylock_path, inp.digest(), profile, [_rel(Path(p), out_dir) for p in paths]))
    else:
        locks = sorted(out_dir.glob("pylock.*.toml"))
        if not locks and output_dir is None:  # the project's own lockfiles/: none yet is no failure
            facts = lockstatus.LockFileFacts(none_in=project.from_here(out_dir))
            findings = policy.check_lockfile(facts)
            return Report("lock", project.from_here(out_dir), findings, context={"check": True})
        if not locks:
            raise SparkenvError(f"{project.from_here(out_dir)}: no pylock.*.toml to check")
        root = confine.project_root(out_dir)
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
                checked.append(lockstatus.Currency(**here, missing_input=missing[0]))
                continue
            inp = inputs_mod.read([str(out_dir / p) for p in recorded], fence=root)
            prof = lockprofile.of_lock(written).with_platform(written.platform)
            checked.append(_currency(pylock_path, inp.digest(), prof, recorded))
    findings = policy.check_lockfile(lockstatus.LockFileFacts(checked=tuple(checked)))
    # "lock", as the schema names the command; that it only checked is in the context
    findings = merge_by_subject(findings)
    return Report("lock", project.from_here(out_dir), findings, profile=profile_name, context={"check": True})


def _currency(
    pylock_path: Path, digest: str, profile: profiles.Profile, inputs: list[str]
) -> lockstatus.Currency:
    """A written lock's recorded hashes against the inputs and profile as they are now: facts only. The
    command that re-locks is given as typed from the working folder, whatever folder the lock is in."""
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
        inputs_changed=written.input_hash != digest,
        profile_changed=lockprofile.changed(written, profile),
        requirements_missing="" if req.is_file() else str(req),
        requirements_disagree=lockread.requirements_disagreement(written),
    )

"""The resolved set judged, once uv has answered (`sparkenv lock`): each package's metadata, the
dependency graph, the wheels' file lists and the GPU packages' ELF, the sdists' builds, old fallbacks,
handed to the rules (policy.check_resolved). Imported after uv has started (lock/resolving.py): none of it
is needed before."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from packaging.requirements import InvalidRequirement, Requirement
from packaging.utils import canonicalize_name

from sparkenv.core.report import Finding
from sparkenv.environment import profiles
from sparkenv.facts.resolved import BuildFailure, Locked, MetadataProblem, SdistBuild, Unresolved
from sparkenv.index import integrity, metadata
from sparkenv.lock import inputs as inputs_mod
from sparkenv.lock import policy, uvdriver


@dataclass
class Judged:
    """The resolved set's findings; whether every read they rest on gave its answer (metadata, file
    lists, RECORDs, sdists, ELF within the budget, index pages, a newer release's metadata); and the
    sha256 of each index page read (project -> digest). Only a complete judgement is kept for a re-lock
    (lock/judged_cache.py): a read that failed now might not fail next time."""

    findings: list[Finding]
    complete: bool
    pages: dict[str, tuple[str, str]] = field(default_factory=dict)  # project -> (URL, sha256)


def judged(
    inp: inputs_mod.Inputs,
    profile: profiles.Profile,
    locked: dict[str, Locked],
    raw: dict[str, dict[str, Any]],
    metas: dict[str, metadata.Metadata | str],
    allowed: set[str],
    index_url: str | None = None,
    prefetched: dict[str, Any] | None = None,
    failures: list[uvdriver.Failed] | None = None,
    so_files: dict[str, tuple[str, ...] | str] | None = None,
) -> Judged:
    from sparkenv.facts import graph
    from sparkenv.lock import fallbacks

    env = profile.marker_env()
    requires, problems = _requirements_of(locked, metas)
    builds = [f for f in failures or [] if isinstance(f, uvdriver.BuildFailed)]
    failed, failed_refs = _requirements_of_failed(builds, index_url, requires)
    unresolved = _unresolved([f for f in failures or [] if isinstance(f, uvdriver.Unresolvable)], index_url,
                             profile)  # fmt: skip
    sdist_refs = [r for r in refs(raw) if not r.is_wheel and not locked[r.key].wheels] + failed_refs
    roots = [d.key for d in inp.requirements if d.key and not d.constraint]
    root_extras = _root_extras(inp, env)
    edges = graph.edges(requires, env, root_extras)
    chain = graph.chains(locked, edges, roots, root_extras)
    kept_out = [n for n in profile.excluded() if n not in allowed]
    base_versions = {k: profile.provides[p] for k in kept_out if (p := profile.provider(k))}
    so_files, elves = _wheel_reads(raw, locked, edges, so_files)
    records = _records_to_read(raw, locked, edges, base_versions)
    sdists = _sdist_builds(sdist_refs)
    reads = fallbacks.Reads()
    old = _fallbacks(inp, profile, locked, raw, edges, chain, index_url, prefetched, reads)
    found = policy.check_resolved(
        locked,
        roots,
        profile,
        None,
        kept_out,
        edges=tuple(edges),
        allow_replace=frozenset(allowed),
        records=records,
        fallbacks=tuple(old),
        metadata_problems=tuple(problems),
        sdist_builds=sdists,
        wheel_files=so_files,
        wheel_elves=elves,
        build_failures=tuple(failed),
        unresolved=unresolved,
        root_extras=root_extras,
        hash_mismatches=integrity.found(_urls(raw)),
    )
    pages = {k: fallbacks.page_read(index_url, k) for k in sorted(reads.pages)}
    complete = (
        not failed
        and not unresolved
        and not reads.unanswered
        and _all_read(pages, metas, so_files, records, sdists, elves)
    )
    return Judged(found, complete, pages)


def _all_read(
    pages: dict[str, tuple[str, str]],
    metas: dict[str, metadata.Metadata | str],
    so_files: dict[str, Any],
    records: dict[str, Any],
    sdists: dict[str, SdistBuild],
    elves: dict[str, Any],
) -> bool:
    """Every read the findings rest on gave its answer: index pages, metadata, file lists, RECORDs,
    sdists' builds, ELF."""
    return (
        all(url and sha for url, sha in pages.values())
        and all(isinstance(m, metadata.Metadata) for m in metas.values())
        and all(isinstance(f, tuple) for f in so_files.values())
        and all(records.values())
        and all(b.kind != "unknown" for b in sdists.values())
        # a wheel the lock's budget cut short is read further on a later run (what was read whole is
        # cached and charged nothing then): the judgement is not final yet. One whose members left
        # unread are each over a limit of their own is read so by every lock: final (wheel_elf)
        and all(e.settled for e in elves.values())
    )


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
        r for r in refs(raw) if verdicts.get(r.key, "") is None and r.is_wheel and fams[r.key].conclusive
    ]
    return metadata.records(unknown)


def _wheel_reads(
    raw: dict[str, dict[str, Any]], locked: dict[str, Locked], edges: list[Any], so_files: Any = None
) -> tuple[Any, Any]:
    """Every binary wheel's file list (unless read already: `so_files`, wheel_files.read's answer), and
    the ELF of the GPU packages' shared objects."""
    from sparkenv.lock import wheel_elf, wheel_files

    so_files = wheel_files.read(refs(raw)) if so_files is None else so_files
    gpu = _gpu_packages(locked, edges, so_files)
    gpu_refs = [r for r in refs(raw) if r.key in gpu]
    shared = {k: wheel_files.shared_objects(v) for k, v in so_files.items() if isinstance(v, tuple)}
    return so_files, wheel_elf.read(gpu_refs, shared)


def _gpu_packages(locked: dict[str, Locked], edges: list, so_files: dict[str, Any]) -> set[str]:  # type: ignore[type-arg]
    """Whose shared objects' ELF to read (resolve/wheel_elf.is_gpu_wheel)."""
    from sparkenv.lock import wheel_elf

    gpu = {e.source for e in edges if wheel_elf.built_against(e.target)}
    return {
        k
        for k in locked
        if isinstance(so_files.get(k), tuple)
        and wheel_elf.is_gpu_wheel(k, locked[k].version, so_files[k], lambda k=k: k in gpu)
    }


def _sdist_builds(refs: list[metadata.FileRef]) -> dict[str, SdistBuild]:
    """What each sdist compiles, read from the sdist; packages.toml's known answers (rules/g2.sdist_build)
    need no download."""
    from sparkenv.knowledge import packages
    from sparkenv.lock import sdist_scan

    known = packages().compiles_cuda
    return sdist_scan.scan([r for r in refs if r.key not in known])


def _failed(
    failures: list[uvdriver.BuildFailed], index_url: str | None
) -> tuple[list[BuildFailure], list[metadata.FileRef]]:
    """Each package uv could not build, with its sdist on the index (to read what it builds and needs)."""
    from packaging.version import InvalidVersion, Version

    from sparkenv.lock import fallbacks

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


def _unresolved(
    failures: list[uvdriver.Unresolvable], index_url: str | None, profile: profiles.Profile
) -> tuple[Unresolved, ...]:
    """Each requirement uv found no set of versions for, with the release nearest to the one uv tried that
    has a wheel for the target (from the index page, lock/fallbacks.py)."""
    from sparkenv.lock import fallbacks

    out = []
    for u in failures:
        releases = fallbacks.every_release(index_url, u.key) if u.key else None
        nearest = fallbacks.nearest_with_wheel(releases or {}, profile, u.tried)
        out.append(Unresolved(u.key, u.kind, u.tried, u.cause, u.platforms, nearest, releases is not None))
    return tuple(out)


def _fallbacks(
    inp: inputs_mod.Inputs,
    profile: profiles.Profile,
    locked: dict[str, Locked],
    raw: dict[str, dict[str, Any]],
    edges: list,  # type: ignore[type-arg]
    chain: dict[str, list[str]],
    index_url: str | None,
    prefetched: dict[str, Any] | None = None,
    reads: Any = None,
) -> list:  # type: ignore[type-arg]
    """Declared requirements not pinned exactly, and sdist-only picks: what the index says of them."""
    from sparkenv.lock import fallbacks

    env = profile.marker_env()
    keys = fallback_roots(inp, profile) | {k for k, p in locked.items() if p.sdist and not p.wheels}
    candidates = {}
    for key in sorted(keys & set(locked)):
        files = raw[key].get("wheels") or ([raw[key]["sdist"]] if "sdist" in raw[key] else [])
        candidates[key] = (locked[key].version, files[0].get("upload-time") if files else None)
    declared = fallbacks.declared_specifiers(inp.requirements, env)
    versions = {k: p.version for k, p in locked.items()}
    pre = {k: f for k, f in (prefetched or {}).items() if k in candidates}
    return fallbacks.gather(candidates, declared, edges, chain, profile, index_url, versions, pre, reads)


def fallback_roots(inp: inputs_mod.Inputs, profile: profiles.Profile) -> set[str]:
    """Declared requirements not pinned exactly: the names whose locked version may be a fallback."""
    env = profile.marker_env()
    exact = {d.key for d in inp.requirements if d.key and d.exact}
    # what the base provides is not resolved: no fallback to look for
    return {
        d.key
        for d in inp.requirements
        if d.key and not d.constraint and d.applies(env) and profile.provider(d.key) is None
    } - exact


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


def _urls(raw: dict[str, dict[str, Any]]) -> set[str]:
    """Every file the lock names (its wheels and sdists)."""
    return {
        f["url"] for e in raw.values() for f in [*e.get("wheels", ()), e.get("sdist") or {}] if f.get("url")
    }


def refs(raw: dict[str, dict[str, Any]]) -> list[metadata.FileRef]:
    """The file whose metadata stands for each package: its first wheel, else its sdist."""
    out = []
    for key, entry in raw.items():
        files = entry.get("wheels") or ([entry["sdist"]] if "sdist" in entry else [])
        if files:
            f = files[0]
            out.append(metadata.FileRef(key, f["url"].rsplit("/", 1)[-1], f["url"], f["hashes"]["sha256"]))
    return out

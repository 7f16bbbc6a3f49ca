"""The audit's only probe: read distributions, their shared objects and the machine's markers."""

from __future__ import annotations

import functools
import os
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

from sparkenv.audit import memo as memo_mod
from sparkenv.audit import ngc
from sparkenv.audit.memo import Memo
from sparkenv.core import children, pool
from sparkenv.core.cache import stat_key
from sparkenv.cuda import coverage, elf, toolchain
from sparkenv.cuda import rules as cuda_rules
from sparkenv.environment import container, kernels
from sparkenv.environment.distributions import Distribution, MetadataProblem, metadata_names, read_one
from sparkenv.environment.target import Target
from sparkenv.facts.installed import AuditFacts, DistFacts, FileProblem, SharedObject
from sparkenv.facts.lock import Lock
from sparkenv.facts.ngc import NgcFacts
from sparkenv.knowledge import packages
from sparkenv.knowledge import toolchain as toolchain_data

# A first audit of a large CUDA venv spends most of its time in readers that need nothing but a path (the
# metadata, ELF and fatbin readers: benchmarks/audit_phases.py): every `.dist-info` folder, then each shared
# object as soon as a RECORD names it, goes to a pool of forked workers (core/pool.py) while this process
# checks requirements, and their answers are taken in the usual order. Nothing is judged in a worker: it
# returns what the readers returned, as plain data (the memo's shapes), with the stat key it took before
# reading. A task without an answer (a worker killed, timed out, crashed) is read here, as without workers.
MAX_WORKERS = 8
TIMEOUT_S = 120.0  # a worker past it is killed and its paths read by the audit's process


def default_workers() -> int:
    """SPARKENV_AUDIT_WORKERS when set (a count; 0: read in the audit's process), else the CPUs this
    process may use less one, at most MAX_WORKERS, none on one CPU."""
    given = os.environ.get("SPARKENV_AUDIT_WORKERS", "").strip()
    if given.isdigit():
        return min(int(given), 64)
    return max(0, min(children.usable_cpus() - 1, MAX_WORKERS))


def gather(
    target: Target,
    lock: Lock | None,
    root: Path = Path("/"),
    gpu: coverage.Capability | None = None,
    env: dict[str, str] | None = None,
    memo: Memo | None = None,
    markers: tuple[container.ContainerFacts, NgcFacts] | None = None,
    workers: int | None = None,
    while_reading: Callable[[dict[str, DistFacts]], object] | None = None,
) -> AuditFacts:
    """`memo`: what an earlier audit read (audit/memo.py), used for every file whose stat is unchanged.
    `workers`: processes reading shared objects beside this one (default_workers; None: as many as
    the machine has CPUs for, 0: none). `while_reading(dists)` runs once every distribution is read,
    while the workers still read shared objects (the requirement check needs only the metadata)."""
    n = default_workers() if workers is None else workers
    ahead = pool.Pool(functools.partial(read_ahead, cap=gpu), n, TIMEOUT_S) if n > 0 else None
    try:
        return _gather(target, lock, root, gpu, env, memo, markers, ahead, while_reading)
    finally:
        if ahead is not None:
            ahead.close()


def _gather(
    target: Target,
    lock: Lock | None,
    root: Path,
    gpu: coverage.Capability | None,
    env: dict[str, str] | None,
    memo: Memo | None,
    markers: tuple[container.ContainerFacts, NgcFacts] | None,
    ahead: pool.Pool | None,
    while_reading: Callable[[dict[str, DistFacts]], object] | None,
) -> AuditFacts:
    dists: dict[str, DistFacts] = {}
    shadowed: list[Distribution] = []
    problems: list[MetadataProblem] = []
    # the data the readers need, loaded before the workers start (each would load its own copy)
    cuda_rules.layout_paths()
    pth_name = packages().sdpa_override_pth
    sdpa: str | None = None
    for site in target.site_dirs:
        if sdpa is None and (site / pth_name).is_file():
            sdpa = str(site / pth_name)
        names = metadata_names(site)
        if isinstance(names, MetadataProblem):
            problems.append(names)
            continue
        if ahead is not None and memo is not None:
            for name in names:
                if not memo.knows(str(site / name)):
                    ahead.submit(_meta_task(site, name))
        for name in names:
            item = _distribution(site, name, memo, ahead)
            if isinstance(item, MetadataProblem):
                problems.append(item)
            elif item.key in dists:
                shadowed.append(item)
            else:
                facts = dists[item.key] = DistFacts(item)
                facts.so_paths = item.shared_object_paths()
                if ahead is not None:
                    _queue(ahead, str(site), facts.so_paths, memo)
    if ahead is not None:
        ahead.close_queue()
    if while_reading is not None:
        while_reading(dists)
    count = 0
    for facts in dists.values():
        count += _scan_files(facts, gpu, memo, ahead)
    found_container, found_ngc = markers or (container.detect(root), ngc.detect(root))
    return AuditFacts(
        target,
        dists,
        shadowed,
        problems,
        found_container,
        found_ngc,
        lock,
        sdpa,
        count,
        gpu,
        _triton(dists, os.environ if env is None else env),
    )


def _queue(ahead: pool.Pool, site: str, so_paths: list[str], memo: Memo | None) -> None:
    """Hand the shared objects this audit will read to the workers; one the memo knows (most likely
    unchanged) is left to the audit's process."""
    for rel in so_paths:
        path = os.path.join(site, rel)
        if memo is None or not memo.knows(path):
            ahead.submit(path)


def read_ahead(task: str, cap: coverage.Capability | None) -> Any:
    """In a worker (gather's pool), a metadata task (_meta_task: _read_dist) or a shared object's
    path: what _elf and the fatbin reader would read of it, as plain data: (stat key taken before the
    reads, the ELF answer as the memo keeps it, the fatbin scans with their stat key). None when
    the ELF reader raised: the audit's process reads it and reports."""
    if "\0" in task:
        return _read_dist(*task.split("\0"))
    path = task
    key = stat_key(path)
    try:
        info = elf.read_file(path, cap is not None)
    except OSError:
        return None
    scans = None
    if cap is not None and isinstance(info, elf.ElfInfo) and info.nv_fatbin is not False:
        kept = kernels.ScanCache()  # kept in memory, sent to the audit's process
        # mapped: a file cut short meanwhile kills this worker (SIGBUS), and the audit reads it itself
        kernels.read_object(path, path, cap, kept, mapped=True)
        scans = kept.entries.get(path)
    return key, _elf_entry(info), scans


def _distribution(
    site: Path, name: str, memo: Memo | None, ahead: pool.Pool | None = None
) -> Distribution | MetadataProblem:
    if memo is None:
        return read_one(site, name)
    meta = str(site / name)
    answer = ahead.answer(_meta_task(site, name)) if ahead is not None else None
    if isinstance(answer, tuple):
        # a worker's reading, with the key it took before reading, as this process would have
        found = _dist_from(answer[1], meta, site)
        if found is not None and answer[0] is not None:
            memo.dist(meta, answer[0])  # the key the facts were read under (for the report's fingerprint)
            memo.put_dist(meta, answer[0], answer[1])
            return found
    key = memo_mod.meta_key(meta)
    hit = memo.dist(meta, key)
    found = _dist_from(hit, meta, site) if hit is not None else None
    if found is not None:
        return found
    item = read_one(site, name)
    if isinstance(item, Distribution):
        kept = _kept(item)
        memo.put_dist(meta, key, _dist_entry(kept))
        # What a later audit gets back from the memo, now: the readers and rules then search a RECORD
        # of the rows they read (shared objects, CUDA layout paths), not one of tens of thousands.
        return kept
    return item


def _kept(dist: Distribution) -> Distribution:
    return dist.reduced(needle for needle, _ in cuda_rules.layout_paths())


def _dist_entry(kept: Distribution) -> dict[str, Any]:
    """What the memo keeps of a distribution (and a worker sends): the metadata with its reduced RECORD."""
    return {
        "name": kept.name,
        "key_name": kept.key,
        "version": kept.version,
        "requires": list(kept.requires),
        "record": kept.record,
        "notes": list(kept.notes),
    }


def _dist_from(entry: Any, meta: str, site: Path) -> Distribution | None:
    """The distribution back from _dist_entry's data; None for anything else (a damaged memo)."""
    try:
        return Distribution(
            str(entry["name"]),
            str(entry["key_name"]),
            str(entry["version"]),
            Path(meta),
            site,
            tuple(str(r) for r in entry["requires"]),
            None if entry["record"] is None else str(entry["record"]),
            tuple(str(n) for n in entry["notes"]),
        )
    except (KeyError, TypeError):
        return None  # not the shape this reader writes: read the files


def _meta_task(site: Path, name: str) -> str:
    return f"{site}\0{name}"  # a NUL, which no path holds, marks a metadata task


def _read_dist(site: str, name: str) -> tuple[Any, Any] | None:
    """In a worker: (the folder's memo key taken before the read, _dist_entry of what was read); None
    for a folder the reader finds a problem in (the audit's process reads it and says so)."""
    meta = str(Path(site) / name)
    key = memo_mod.meta_key(meta)
    item = read_one(Path(site), name)
    return (key, _dist_entry(_kept(item))) if isinstance(item, Distribution) else None


def _triton(dists: dict[str, DistFacts], env: Mapping[str, str]) -> toolchain.TritonTools | None:
    """Triton's ptxas, with the variables as set where the audit runs (in a built image's
    verification: the image's ENV)."""
    for key in ("triton", "pytorch-triton"):
        facts = dists.get(key)
        if facts is not None:
            return kernels.read_triton(str(facts.dist.site_dir), facts.dist.name, facts.dist.version, env)
    return None


def ptxas_paths(facts: AuditFacts) -> list[str]:
    """The ptxas binaries the Triton facts came from: the audit's cache watches their stat."""
    triton = facts.dists.get("triton") or facts.dists.get("pytorch-triton")
    if triton is None:
        return []
    spec = toolchain_data().triton
    site = str(triton.dist.site_dir)
    found = [os.path.join(site, spec.bundled_dir, t) for t in (spec.default_tool, spec.blackwell_tool)]
    return found + (list(facts.triton.env.values()) if facts.triton else [])


def _elf(
    path: str, memo: Memo | None, hint: bool = False, ahead: pool.Pool | None = None
) -> elf.ElfInfo | elf.ElfDefect | None:
    """The ELF reader's answer: a worker's reading of it this run (gather's pool), else the memo's
    when the file's stat is the one it was read under, else read here."""
    if memo is None and ahead is None:
        return elf.read_file(path, hint)
    info: Any = _UNKNOWN
    read = ahead.answer(path) if ahead is not None else None
    if isinstance(read, tuple) and read[0] is not None:
        key = read[0]  # taken by the worker before it read, as this process takes it
        info = _elf_from(read[1])
        if memo is not None:
            memo.elf_info(path, key)  # the key the facts were read under (for the report's fingerprint)
    if info is _UNKNOWN:
        key = stat_key(path)
        if memo is not None:
            hit = memo.elf_info(path, key)
            if hit is not None:
                info = _elf_from(hit)
                if info is not _UNKNOWN:
                    return info  # type: ignore[no-any-return]
        info = elf.read_file(path, hint)  # raises OSError for a missing or unreadable file: never remembered
    if memo is not None:
        memo.put_elf(path, key, _elf_entry(info))
    return info  # type: ignore[no-any-return]


_UNKNOWN = object()  # an entry not of the shape _elf_entry writes


def _elf_entry(info: elf.ElfInfo | elf.ElfDefect | None) -> dict[str, Any]:
    """The ELF reader's answer as plain data (the memo's entry, a worker's answer)."""
    if info is None:
        return {"kind": "none"}
    if isinstance(info, elf.ElfDefect):
        return {"kind": "defect", "reason": info.reason}
    return {
        "kind": "info",
        "machine": info.machine,
        "soname": info.soname,
        "needed": list(info.needed),
        "rpath": list(info.rpath),
        "runpath": list(info.runpath),
        "nv_fatbin": info.nv_fatbin,
    }


def _elf_from(hit: Any) -> Any:
    """The answer back from _elf_entry's data; _UNKNOWN for anything else (a damaged memo)."""
    try:
        if hit["kind"] == "none":
            return None
        if hit["kind"] == "defect":
            return elf.ElfDefect(str(hit["reason"]))
        return elf.ElfInfo(
            str(hit["machine"]),
            None if hit["soname"] is None else str(hit["soname"]),
            tuple(str(n) for n in hit["needed"]),
            tuple(str(n) for n in hit["rpath"]),
            tuple(str(n) for n in hit["runpath"]),
            hit.get("nv_fatbin") if isinstance(hit.get("nv_fatbin"), bool) else None,
        )
    except (KeyError, TypeError, AttributeError):
        return _UNKNOWN


def _scan_files(
    facts: DistFacts,
    gpu: coverage.Capability | None = None,
    memo: Memo | None = None,
    ahead: pool.Pool | None = None,
) -> int:
    for note in facts.dist.notes:
        # a RECORD that exists but cannot be read (a FIFO, a device, a loop) hides every shared object
        if note.startswith("RECORD unreadable"):
            reason = note.removeprefix("RECORD unreadable: ") + "; its shared objects"
            facts.problems.append(FileProblem(str(facts.dist.meta_dir / "RECORD"), facts.dist.key, reason))
    site = str(facts.dist.site_dir)
    seen = 0
    for rel in facts.so_paths:
        path = os.path.join(site, rel)
        try:
            info = _elf(path, memo, gpu is not None, ahead)
        except FileNotFoundError:
            if os.path.islink(path):
                facts.problems.append(FileProblem(path, facts.dist.key, "dangling symlink"))
            else:
                facts.problems.append(FileProblem(path, facts.dist.key, "listed in RECORD but missing"))
            continue
        except OSError as exc:
            facts.problems.append(FileProblem(path, facts.dist.key, f"unreadable: {exc.strerror or exc}"))
            continue
        if info is None:
            continue  # a linker script or a text stub named .so: nothing to link against
        if isinstance(info, elf.ElfDefect):
            facts.problems.append(FileProblem(path, facts.dist.key, info.reason))
            continue
        facts.shared_objects.append(SharedObject(rel, info))
        seen += 1
        # nv_fatbin False: the ELF reader saw no .nv_fatbin, so the fatbin reader would return None
        # (kernels.read_object); it is not opened a second time. None (not known) reads as before.
        if gpu is not None and info.nv_fatbin is not False:
            found = kernels.read_object(path, rel, gpu, None, _scans_of(ahead, path))
            if found is not None:
                facts.kernels.append(found)
    return seen


def _scans_of(ahead: pool.Pool | None, path: str) -> kernels.Scans | None:
    """The fatbin scans a worker made of `path`, with their stat key."""
    if ahead is None:
        return None
    read = ahead.answer(path)
    return read[2] if read is not None and isinstance(read[2], dict) else None

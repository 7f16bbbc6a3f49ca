"""The audit's only probe: read distributions, their shared objects and the machine's markers."""

from __future__ import annotations

import os
from collections.abc import Mapping
from pathlib import Path

from sparkenv.audit import memo as memo_mod
from sparkenv.audit import ngc
from sparkenv.audit.memo import Memo
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
from sparkenv.stat_cache import stat_key


def gather(
    target: Target,
    lock: Lock | None,
    root: Path = Path("/"),
    gpu: coverage.Capability | None = None,
    env: dict[str, str] | None = None,
    memo: Memo | None = None,
    markers: tuple[container.ContainerFacts, NgcFacts] | None = None,
) -> AuditFacts:
    """`memo`: what an earlier audit read (audit/memo.py), used for every file whose stat is unchanged."""
    dists: dict[str, DistFacts] = {}
    shadowed: list[Distribution] = []
    problems: list[MetadataProblem] = []
    pth_name = packages().sdpa_override_pth
    sdpa: str | None = None
    for site in target.site_dirs:
        if sdpa is None and (site / pth_name).is_file():
            sdpa = str(site / pth_name)
        names = metadata_names(site)
        if isinstance(names, MetadataProblem):
            problems.append(names)
            continue
        for name in names:
            item = _distribution(site, name, memo)
            if isinstance(item, MetadataProblem):
                problems.append(item)
            elif item.key in dists:
                shadowed.append(item)
            else:
                dists[item.key] = DistFacts(item)
    count = 0
    cache = kernels.ScanCache.default() if gpu is not None else None
    for facts in dists.values():
        count += _scan_files(facts, gpu, cache, memo)
    if cache is not None:
        cache.save()
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
        _triton(dists, os.environ if env is None else env, memo is not None),
    )


def _distribution(site: Path, name: str, memo: Memo | None) -> Distribution | MetadataProblem:
    if memo is None:
        return read_one(site, name)
    meta = str(site / name)
    key = memo_mod.meta_key(meta)
    hit = memo.dist(meta, key)
    if hit is not None:
        try:
            return Distribution(
                str(hit["name"]),
                str(hit["key_name"]),
                str(hit["version"]),
                Path(meta),
                site,
                tuple(str(r) for r in hit["requires"]),
                None if hit["record"] is None else str(hit["record"]),
                tuple(str(n) for n in hit["notes"]),
            )
        except (KeyError, TypeError):
            pass  # not the shape this reader writes: read the files
    item = read_one(site, name)
    if isinstance(item, Distribution):
        kept = item.reduced(needle for needle, _ in cuda_rules.layout_paths())
        memo.put_dist(
            meta,
            key,
            {
                "name": kept.name,
                "key_name": kept.key,
                "version": kept.version,
                "requires": list(kept.requires),
                "record": kept.record,
                "notes": list(kept.notes),
            },
        )
        # What a later audit gets back from the memo, now: the readers and rules then search a RECORD
        # of the rows they read (shared objects, CUDA layout paths), not one of tens of thousands.
        return kept
    return item


def _triton(
    dists: dict[str, DistFacts], env: Mapping[str, str], cached: bool = False
) -> toolchain.TritonTools | None:
    """Triton's ptxas, with the variables as set where the audit runs (in a built image's
    verification: the image's ENV). `cached`: a release read before from the very same file is reused."""
    for key in ("triton", "pytorch-triton"):
        facts = dists.get(key)
        if facts is not None:
            cache = kernels.ptxas_cache() if cached else None
            tools = kernels.read_triton(
                str(facts.dist.site_dir), facts.dist.name, facts.dist.version, env, cache
            )
            if cache is not None:
                cache.save()
            return tools
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


def _elf(path: str, memo: Memo | None, hint: bool = False) -> elf.ElfInfo | elf.ElfDefect | None:
    """The ELF reader's answer, from the memo when the file's stat is the one it was read under."""
    if memo is None:
        return elf.read_file(path, hint)
    key = stat_key(path)
    hit = memo.elf_info(path, key)
    if hit is not None:
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
        except (KeyError, TypeError):
            pass
    info = elf.read_file(path, hint)  # raises OSError for a missing or unreadable file: never remembered
    if info is None:
        memo.put_elf(path, key, {"kind": "none"})
    elif isinstance(info, elf.ElfDefect):
        memo.put_elf(path, key, {"kind": "defect", "reason": info.reason})
    else:
        memo.put_elf(
            path,
            key,
            {
                "kind": "info",
                "machine": info.machine,
                "soname": info.soname,
                "needed": list(info.needed),
                "rpath": list(info.rpath),
                "runpath": list(info.runpath),
                "nv_fatbin": info.nv_fatbin,
            },
        )
    return info


def _scan_files(
    facts: DistFacts,
    gpu: coverage.Capability | None = None,
    cache: kernels.ScanCache | None = None,
    memo: Memo | None = None,
) -> int:
    for note in facts.dist.notes:
        # a RECORD that exists but cannot be read (a FIFO, a device, a loop) hides every shared object
        if note.startswith("RECORD unreadable"):
            reason = note.removeprefix("RECORD unreadable: ") + "; its shared objects"
            facts.problems.append(FileProblem(str(facts.dist.meta_dir / "RECORD"), facts.dist.key, reason))
    facts.so_paths = facts.dist.shared_object_paths()
    site = str(facts.dist.site_dir)
    seen = 0
    for rel in facts.so_paths:
        path = os.path.join(site, rel)
        try:
            info = _elf(path, memo, gpu is not None)
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
            found = kernels.read_object(path, rel, gpu, cache)
            if found is not None:
                facts.kernels.append(found)
    return seen

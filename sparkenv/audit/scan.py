"""The audit's only probe: read distributions, their shared objects and the machine's markers."""

from __future__ import annotations

import os
from collections.abc import Mapping
from pathlib import Path

from sparkenv.audit import ngc
from sparkenv.cuda import coverage, elf, toolchain
from sparkenv.environment import container, kernels
from sparkenv.environment.distributions import Distribution, MetadataProblem, iter_distributions
from sparkenv.environment.target import Target
from sparkenv.facts.installed import AuditFacts, DistFacts, FileProblem, SharedObject
from sparkenv.facts.lock import Lock
from sparkenv.knowledge import packages


def gather(
    target: Target,
    lock: Lock | None,
    root: Path = Path("/"),
    gpu: coverage.Capability | None = None,
    env: dict[str, str] | None = None,
) -> AuditFacts:
    dists: dict[str, DistFacts] = {}
    shadowed: list[Distribution] = []
    problems: list[MetadataProblem] = []
    pth_name = packages().sdpa_override_pth
    sdpa: str | None = None
    for site in target.site_dirs:
        if sdpa is None and (site / pth_name).is_file():
            sdpa = str(site / pth_name)
        for item in iter_distributions(site):
            if isinstance(item, MetadataProblem):
                problems.append(item)
            elif item.key in dists:
                shadowed.append(item)
            else:
                dists[item.key] = DistFacts(item)
    count = 0
    cache = kernels.ScanCache.default() if gpu is not None else None
    for facts in dists.values():
        count += _scan_files(facts, gpu, cache)
    if cache is not None:
        cache.save()
    return AuditFacts(
        target,
        dists,
        shadowed,
        problems,
        container.detect(root),
        ngc.detect(root),
        lock,
        sdpa,
        count,
        gpu,
        _triton(dists, os.environ if env is None else env),
    )


def _triton(dists: dict[str, DistFacts], env: Mapping[str, str]) -> toolchain.TritonTools | None:
    """Triton's ptxas, with the variables as set where the audit runs (in a built image's
    verification: the image's ENV)."""
    for key in ("triton", "pytorch-triton"):
        facts = dists.get(key)
        if facts is not None:
            return kernels.read_triton(str(facts.dist.site_dir), facts.dist.name, facts.dist.version, env)
    return None


def _scan_files(
    facts: DistFacts, gpu: coverage.Capability | None = None, cache: kernels.ScanCache | None = None
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
            info = elf.read_file(path)
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
        if gpu is not None:
            found = kernels.read_object(path, rel, gpu, cache)
            if found is not None:
                facts.kernels.append(found)
    return seen

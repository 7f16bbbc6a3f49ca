"""G1 at Stage.INSTALLED: an environment read from outside (sparkenv audit, build's self-audit): every
distribution's CUDA major from names, labels, Requires-Dist, paths and the DT_NEEDED of its shared
objects, CPU-only torch, wrong-CPU shared objects, bitsandbytes' CUDA library."""

from __future__ import annotations

import os
from collections import defaultdict
from dataclasses import dataclass, field
from functools import partial
from typing import TYPE_CHECKING

from sparkenv.core.report import Finding, GotchaId, Status
from sparkenv.cuda import rules
from sparkenv.environment.markers import marker_environment
from sparkenv.rules import cpu_only_class, cuda_major, cuda_per_release, wrong_cpu
from sparkenv.rules.cuda_major import Binding, Evidence

if TYPE_CHECKING:
    from sparkenv.facts.dist_view import DistView
    from sparkenv.facts.installed import AuditFacts

from sparkenv.rules.g1_declared import fix_for

_finding = partial(Finding, GotchaId.G1)  # every finding of this module is G1's

MAX_EVIDENCE = 12


def installed(facts: AuditFacts) -> list[Finding]:
    binds = cuda_major.bindings(facts)
    target = rules.target_major()
    required_by: dict[str, list[str]] = defaultdict(list)
    for b in binds.values():
        for key in b.requires_keys:
            required_by[key].append(b.key)
    has_target = any(target in b.majors for b in binds.values())

    machine = facts.target.machine
    chains: dict[str, list[str]] | None = None
    findings: list[Finding] = []
    for key, df in facts.dists.items():
        by = sorted(required_by.get(key, []))
        finding = dist_finding(df, binds[key], machine, by, has_target)
        if finding and finding.status in (Status.FAIL, Status.WARN):
            if chains is None:  # only when something is wrong: the whole graph of a large venv costs
                chains = _chains(facts)
            chain = chains.get(key, [key])
            if not by and len(chain) > 1:  # required only through an extra (ray[cgraph] → cupy-cuda12x)
                by = [chain[-2].split("[")[0]]
            finding = dist_finding(df, binds[key], machine, by, has_target, chain)
        if finding:
            findings.append(finding)
    findings += _problems(facts)
    findings.append(_summary(facts, binds, target))
    return findings


def _chains(facts: AuditFacts) -> dict[str, list[str]]:
    """The chain that pulled each installed distribution in, through extras and markers, from installed
    METADATA (facts/graph.installed_chains, the lock's chain function on the audit's facts)."""
    from sparkenv.facts import graph

    env = marker_environment(facts.target.machine, facts.target.python_version)
    return graph.installed_chains({k: df.dist.requires for k, df in facts.dists.items()}, env)


@dataclass
class _Verdict:
    """One distribution's evidence added up step by step: the worst status so far, the problems in
    words with their fixes, and the evidence lines the finding shows."""

    status: Status
    evidence: list[str]
    problems: list[str] = field(default_factory=list)
    fixes: list[str] = field(default_factory=list)

    def add(self, status: Status, problem: str, fix: str) -> None:
        self.status = status
        self.problems.append(problem)
        self.fixes.append(fix)


def dist_finding(
    df: DistView,
    b: Binding,
    machine: str,
    required_by: list[str],
    has_target: bool,
    chain: list[str] | None = None,
    on_base: bool = False,
) -> Finding | None:
    """G1's judgement of one distribution, installed (audit) or a resolved wheel read at lock: the one
    function both stages call. `b`: its evidence (cuda_major.bind); `required_by`: who requires it (by a
    CUDA-relevant requirement); `chain`: the chain that pulled it in, when longer than itself;
    `on_base`: the profile is an NGC image already (the fix does not offer it)."""
    target = rules.target_major()
    v = _Verdict(Status.PASS, [e.text for e in b.evidence])
    who = f"{df.key} {df.version}" + (f" (via {' → '.join(chain)})" if chain and len(chain) > 1 else "")
    _wrong_cpu(df, machine, v)
    per_release = _per_release(df, machine, v, who)
    if per_release is not None:
        return per_release
    _cpu_only(df, b, v, on_base)
    _cpu_only_class(df, b, machine, v)
    _other_major(df, b, target, required_by, has_target, v, on_base)
    if not v.problems and df.unread and not df.gpu_package:
        # its ELF is not read at lock (not a GPU package): only a bundled library of another major is
        # worth a line; what its name and version say is g1_declared's
        quiet = _no_problem(df, b, target, v.evidence, who)
        return quiet if quiet is not None and quiet.status is Status.INFO else None
    if not v.problems and df.unread:
        return _finding(
            status=Status.INFO,
            summary=f"{who}: "
            + (f"{_short(b.evidence[0])}; " if b.evidence else "")
            + f"what its shared objects link was not all read ({df.unread}); `sparkenv audit` reads it "
            "after install",
            subject=df.key,
            evidence=_cap(v.evidence),
        )
    if not v.problems:
        return _no_problem(df, b, target, v.evidence, who)
    return _finding(
        status=v.status,
        summary=f"{who} {'; '.join(v.problems)}{df.read_from}",
        subject=df.key,
        evidence=_cap(v.evidence),
        fix="; ".join(dict.fromkeys(v.fixes)),
    )


def _wrong_cpu(df: DistView, machine: str, v: _Verdict) -> None:
    """Shared objects built for another CPU than the environment's."""
    wrong_arch = wrong_cpu.shared_objects(df, machine)
    if not wrong_arch:
        return
    machines = sorted({so.info.machine for so in wrong_arch})
    v.add(
        Status.FAIL,
        f"ships {len(wrong_arch)} {'/'.join(machines)} shared object(s) in a {machine} environment "
        f"({wrong_arch[0].relpath})",
        f"reinstall it for {machine} (a wheel copied from another machine, or installed with the wrong "
        "--platform)",
    )
    v.evidence[:0] = [f"{so.relpath} is {so.info.machine}" for so in wrong_arch]


def _cpu_only(df: DistView, b: Binding, v: _Verdict, on_base: bool) -> None:
    """A CPU-only build: a +cpu label, or a torch whose files hold no libtorch_cuda."""
    cpu = [e for e in b.evidence if e.kind == "cpu"]
    if (
        df.key == "torch"
        and not cpu
        and df.files_known
        and not any(os.path.basename(f).startswith("libtorch_cuda") for f in df.so_paths)
    ):
        cpu = [Evidence(None, "cpu", "no libtorch_cuda.so among its files")]
        v.evidence.append(cpu[0].text)
    if cpu:  # the same status for every package and stage: see cuda_major.CPU_ONLY for why
        v.add(cuda_major.CPU_ONLY, f"is a CPU-only build ({cpu[0].text})", fix_for(df.key, "cpu", on_base))


def _cpu_only_class(df: DistView, b: Binding, machine: str, v: _Verdict) -> None:
    """A GPU-capable distribution (CUDA libraries required on another CPU) built without CUDA for this one:
    a WARN with the evidence (rules/cpu_only_class.py), at lock and at audit alike."""

    if v.problems:  # a FAIL already says what is wrong with it
        return
    why = cpu_only_class.evidence(df, b.majors, machine)
    if not why:
        return
    v.add(
        Status.WARN,
        f"looks like a CPU-only build for {machine}: {'; '.join(why)} — on a Spark it runs on the CPU",
        f"use a build of {df.key} for {machine} with CUDA {rules.target_major()} if its publisher has one "
        "(a newer release, another index, an NGC image), or build it against CUDA on the Spark",
    )
    v.evidence.extend(why)


def _other_major(
    df: DistView,
    b: Binding,
    target: int,
    required_by: list[str],
    has_target: bool,
    v: _Verdict,
    on_base: bool,
) -> None:
    """Bound to another CUDA major: a FAIL, or a WARN for a CUDA library nothing installed requires."""
    key = df.key
    other = sorted(m for m in _binding_majors(b) if m != target)
    if not other:
        return
    major = other[-1]
    strongest = next(e for e in b.evidence if e.major == major)
    name = rules.name_match(key)
    also = f"; also CUDA {target} evidence" if target in b.majors else ""
    if name and name.library and not required_by and v.status is not Status.FAIL:
        v.add(
            Status.WARN,
            f"is CUDA {major} residue nobody installed requires ({_short(strongest)}{also})"
            + (f" next to CUDA {target} packages" if has_target else ""),
            f"pip uninstall {key}",
        )
        return
    chain = f", required by {', '.join(required_by)}" if required_by else ""
    v.add(
        Status.FAIL,
        f"needs CUDA {major}: {_short(strongest)}{also}{chain} — target is CUDA {target}",
        _fix_for(key, required_by, strongest.kind, on_base),
    )


def _binding_majors(b: Binding) -> set[int]:
    # Shipping a CUDA 12 library is not needing one: triton bundles libcupti.so.12 for its profiler and
    # nothing links it. Only what the loader will resolve (and names, labels, requirements) binds.
    return {e.major for e in b.evidence if e.major is not None and e.kind != "provides"}


def _no_problem(df: DistView, b: Binding, target: int, evidence: list[str], who: str) -> Finding | None:
    """Nothing wrong: a bundled library of another major nothing links (INFO), the target's (PASS), or
    nothing CUDA at all (no finding)."""
    binding = _binding_majors(b)
    bundled = [e for e in b.evidence if e.kind == "provides" and e.major not in binding and e.major != target]
    if bundled:
        names = ", ".join(sorted({e.soname or e.text for e in bundled}))
        linked = (
            f"whether its shared objects link it was not read ({df.unread}); `sparkenv audit` reads it after "
            "install"
            if df.unread
            else "that none of its shared objects links: loaded on demand if at all (e.g. by a profiler), "
            "not a binding"
        )
        return _finding(
            status=Status.INFO,
            summary=f"{who} bundles {names} (CUDA {bundled[0].major}){': ' if df.unread else ' '}{linked}",
            subject=df.key,
            evidence=_cap(evidence),
        )
    if b.majors:
        return _finding(
            status=Status.PASS,
            summary=f"{who} needs CUDA {target}: {_short(b.evidence[0])}{df.read_from}",
            subject=df.key,
            evidence=_cap(evidence),
        )
    return None


def _fix_for(key: str, required_by: list[str], kind: str, on_base: bool) -> str:
    if required_by:
        return f"fix {', '.join(required_by)} first (it pulls {key} in), then pip uninstall {key}"
    return fix_for(key, kind, on_base)


def _per_release(df: DistView, machine: str, v: _Verdict, who: str) -> Finding | None:
    """One library per CUDA release (bitsandbytes and its like), one of which is picked by
    torch.version.cuda: the judgement the lock makes on the wheel's file list, here on installed files."""

    got = cuda_per_release.verdict(df.key, df.so_paths, machine)
    if got is None:
        return None
    ok, what, fix = got
    libs = cuda_per_release.libraries(df.so_paths)
    evidence = v.evidence + [f"carries {names[0]}" for _, names in sorted(libs.items())]
    if ok and v.status is Status.PASS:
        return _finding(
            status=Status.PASS,
            summary=f"{who} {what}{df.read_from}",
            subject=df.key,
            evidence=_cap(evidence),
        )
    if not ok:
        v.add(Status.FAIL, what, fix)
    return _finding(
        status=Status.FAIL,
        summary=f"{who} {'; '.join(v.problems)}{df.read_from}",
        subject=df.key,
        evidence=_cap(evidence),
        fix="; ".join(v.fixes),
    )


def _problems(facts: AuditFacts) -> list[Finding]:
    out = []
    for p in facts.metadata_problems:
        out.append(
            _finding(
                status=Status.ERROR,
                summary=f"{p.path}: {p.reason}; this distribution was not checked",
                subject=str(p.path),
                fix="reinstall the distribution (pip install --force-reinstall --no-deps)",
            )
        )
    for df in facts.dists.values():
        for fp in df.problems:
            out.append(
                _finding(
                    status=Status.WARN,
                    summary=f"{fp.path} ({fp.owner}): {fp.reason}; not checked",
                    subject=fp.path,
                    evidence=(f"owner: {fp.owner}",),
                    fix=f"pip install --force-reinstall --no-deps {fp.owner}",
                )
            )
    return out


def _summary(facts: AuditFacts, binds: dict[str, Binding], target: int) -> Finding:
    bound = sum(1 for b in binds.values() if b.majors)
    t = facts.target
    return _finding(
        status=Status.INFO,
        summary=f"read {len(facts.dists)} distributions and {facts.shared_object_count} shared objects; "
        f"{bound} tied to a CUDA major; environment {t.machine}, Python {t.python_version or 'unknown'}, "
        f"target CUDA {target}",
        subject="environment",
        evidence=(
            f"read {t.read_what()}",
            f"machine from {t.machine_source}",
            *(f"site folder {d}" for d in t.site_dirs),
            f"CUDA rules reviewed {rules.reviewed()}",
        ),
    )


def _short(e: Evidence) -> str:
    """Evidence text without its "(CUDA N)" note, for a summary that already names the major."""
    return e.text.replace(f" (CUDA {e.major})", "")


def _cap(evidence: list[str]) -> tuple[str, ...]:
    if len(evidence) <= MAX_EVIDENCE:
        return tuple(evidence)
    return (*evidence[:MAX_EVIDENCE], f"… and {len(evidence) - MAX_EVIDENCE} more")


# ---------------------------------------------------------------------------------------------------

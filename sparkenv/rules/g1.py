"""G1 — CUDA 12 (or CPU-only) builds on a CUDA 13 machine: every stage's judgement.

declared: names, +cu/+cpu labels, exact pins, index and wheel URLs of each requirement (check, lock);
resolved: every resolved file and its Requires-Dist, with the chain that pulled it in (lock);
installed: every distribution's CUDA major from names, labels, Requires-Dist, paths and the DT_NEEDED of
its shared objects, CPU-only torch, wrong-CPU shared objects, bitsandbytes (audit, build's self-audit);
live: torch's CUDA build, the first CUDA operation, a CUDA 12 runtime on the loader path (gate).
The CUDA major of each piece of evidence comes from rules/cuda_major.py, for all of them.
"""

from __future__ import annotations

import os
from collections import defaultdict
from collections.abc import Iterable
from typing import TYPE_CHECKING, Any

from sparkenv.cuda import driver as drv
from sparkenv.cuda import rules
from sparkenv.knowledge import drivers, packages
from sparkenv.report import Finding, GotchaId, Status
from sparkenv.rules import Rule, Stage, cuda_major
from sparkenv.rules.cuda_major import Binding, Evidence

if TYPE_CHECKING:
    from sparkenv.facts.declared import Declared, DeclaredFacts
    from sparkenv.facts.installed import AuditFacts, DistFacts
    from sparkenv.facts.live import GateFacts
    from sparkenv.facts.resolved import ResolvedFacts
    from sparkenv.profiles import Profile

MAX_EVIDENCE = 12
_TORCH_FAMILY = {"torch", "torchvision", "torchaudio"}
CU130_INDEX = "https://download.pytorch.org/whl/cu130"


# ---------------------------------------------------------------------------------------------------
# Stage.DECLARED and Stage.RESOLVED: what a name, a version and a Requires-Dist say


def _cuda_fail(
    key: str, version: str | None, subject_desc: str, evidence: tuple[str, ...], on_base: bool = False
) -> list[Finding]:
    """G1 from what a name or version says: -cu12 names, +cu128/+cpu labels, versioned toolkit wheels."""
    out: list[Finding] = []
    target = rules.target_major()
    for e in cuda_major.name_version_evidence(key, version):
        if e.kind == "cpu":
            summary = f"{subject_desc} is a CPU-only build (+cpu): no CUDA at all"
        elif e.major is None or e.major == target:
            continue
        elif e.kind == "name":
            summary = f"{subject_desc} is built for CUDA {e.major} (name) — target is CUDA {target}"
        elif e.kind == "label":
            summary = f"{subject_desc} is a CUDA {e.major} build (+cu label) — target is CUDA {target}"
        elif e.kind == "pin":
            summary = (
                f"{subject_desc} is CUDA {e.major}'s (its version is the CUDA version) — "
                f"target is CUDA {target}"
            )
        else:  # an NGC build of a release on another CUDA major
            summary = f"{subject_desc}: {e.text} — target is CUDA {target}"
        out.append(
            Finding(
                id=GotchaId.G1,
                status=cuda_major.CPU_ONLY if e.kind == "cpu" else cuda_major.OTHER_MAJOR,
                summary=summary,
                subject=key,
                evidence=evidence,
                fix=fix_for(key, e.kind, on_base),
            )
        )
    return out


def fix_for(key: str, kind: str, on_base: bool = False) -> str:
    """The fix for a package bound to another CUDA major (or to none), by the kind of the evidence: one
    text for every stage that sees the same evidence (check, lock, audit). `on_base`: the profile in use
    is already an NGC image, so "use the NGC image" is no way out."""
    ngc = "" if on_base else " or use the NGC image"
    if key in _TORCH_FAMILY or kind == "cpu":
        return f"install the CUDA 13 build from {CU130_INDEX}{ngc}"
    name = rules.name_match(key)
    if name:
        return f"replace it with {name.cuda13_name}{',' if ngc else ''}{ngc}"
    if kind == "pin":
        return f"use {key} {rules.target_major()}.x{',' if ngc else ''}{ngc}"
    if kind == "ngc":
        return "use an NGC release on CUDA 13 (25.09 or later)"
    return f"install a CUDA 13 build (the cu130 index, a newer version with a CUDA 13 wheel){ngc}"


def _cuda_pass(key: str, version: str | None, subject_desc: str, evidence: tuple[str, ...]) -> list[Finding]:
    target = rules.target_major()
    majors = [e.major for e in cuda_major.name_version_evidence(key, version) if e.major is not None]
    if majors and majors[0] == target:
        return [
            Finding(
                id=GotchaId.G1,
                status=Status.PASS,
                summary=f"{subject_desc} is built for CUDA {target}",
                subject=key,
                evidence=evidence,
            )
        ]
    return []


def declared(facts: DeclaredFacts) -> list[Finding]:
    profile = facts.profile
    target = rules.target_major()
    out: list[Finding] = []
    for url in facts.index_urls:
        label = rules.index_label(url)
        if label is None:
            continue
        major = rules.label_cuda_major(label)
        if rules.is_cpu_label(label) or (major is not None and major != target):
            what = "CPU-only" if rules.is_cpu_label(label) else f"CUDA {major}"
            out.append(
                Finding(
                    id=GotchaId.G1,
                    status=Status.FAIL,
                    summary=f"index {url} serves {what} builds — target is CUDA {target}",
                    subject=url,
                    evidence=(),
                    fix="use https://download.pytorch.org/whl/cu130 (or leave torch to the NGC base)",
                )
            )
    for d in facts.applicable:
        out += _declared_one(d, profile)
    out.append(
        Finding(
            id=GotchaId.G1,
            status=Status.INFO,
            summary=f"checked {facts.counted} requirement(s) for {profile.describe()}; {facts.skipped} do "
            f"not apply on {profile.machine} (markers evaluated for the target, not this host)",
            subject="inputs",
        )
    )
    return out


def _declared_one(d: Declared, profile: Profile) -> list[Finding]:
    from packaging.version import Version

    key = d.key
    assert key is not None
    ev = (d.where,)
    desc = f"{key}{d.specifier}" if str(d.specifier) else key
    out = _cuda_fail(key, d.exact, f"{desc} ({d.where})", ev, bool(profile.image))
    if d.url and d.url.endswith(".whl"):
        out += _url_wheel(d, profile)
    if not out:
        out += _cuda_pass(key, d.exact, f"{desc} ({d.where})", ev)
    first = packages().first_cuda13(key, profile.machine) if key == "torch" else None
    if first is not None and d.exact and not d.url and profile.provider(key) is None:
        v = Version(d.exact)
        if not v.local and v < Version(first.version):
            out.append(
                Finding(
                    id=GotchaId.G1,
                    status=Status.WARN,
                    summary=f"{desc} ({d.where}): an unlabelled pin below {first.version} matches builds "
                    f"without CUDA 13: the default index's {profile.machine} wheels before {first.version} "
                    f"carry {first.before} (=={d.exact} also matches labelled builds such as "
                    f"{d.exact}+cu128); `sparkenv lock` reads the file it "
                    "resolves to and fails a CPU-only or CUDA 12 build",
                    subject=key,
                    evidence=(*ev, f"{first.evidence} (read {first.checked}; {first.source})"),
                    fix=f"pin torch>={first.version} (the default index's {profile.machine} wheels carry "
                    f"CUDA 13 from {first.version} on), or the +cu130 build from {CU130_INDEX}",
                )
            )
    return out


def _url_wheel(d: Declared, profile: Profile) -> list[Finding]:
    from packaging.utils import InvalidWheelFilename, parse_wheel_filename

    assert d.url is not None and d.key is not None
    fname = d.url.rsplit("/", 1)[-1].split("#")[0]
    try:
        _, version, _, tags = parse_wheel_filename(fname)
    except InvalidWheelFilename:
        return []
    out = _cuda_fail(
        d.key, str(version), f"{d.key} @ {fname} ({d.where})", (d.where, d.url), bool(profile.image)
    )
    machines = {t.platform for t in tags}
    if "any" not in machines and not any(p.endswith(profile.machine) for p in machines):
        out.append(
            Finding(
                id=GotchaId.G1,
                status=Status.FAIL,
                summary=f"{d.key} @ {fname} ({d.where}) is built for {', '.join(sorted(machines))}, not "
                f"{profile.machine}",
                subject=d.key,
                evidence=(d.where, d.url),
                fix=f"use a wheel built for {profile.machine}",
            )
        )
    return out


def resolved(facts: ResolvedFacts) -> list[Finding]:
    from packaging.utils import canonicalize_name

    target = rules.target_major()
    out: list[Finding] = []
    for key, pkg in sorted(facts.locked.items()):
        ev = facts.evidence(key)
        desc = facts.describe(key)
        fails = _cuda_fail(key, pkg.version, desc, ev, bool(facts.profile.image))
        for req in facts.applicable_requires(key):
            dep = canonicalize_name(req.name)
            if dep in facts.locked:
                continue  # judged as itself, with its chain
            major = cuda_major.requirement_major(dep, str(req.specifier))
            if major is not None and major != target:
                fails.append(
                    Finding(
                        id=GotchaId.G1,
                        status=Status.FAIL,
                        summary=f"{desc} requires {req} (CUDA {major}) — target is CUDA {target}",
                        subject=key,
                        evidence=ev,
                        fix=f"pick a {key} build for CUDA {target}",
                    )
                )
        out += fails or _cuda_pass(key, pkg.version, desc, ev)
    return out + resolved_cpu_only(facts) + resolved_wheel_files(facts)


def resolved_cpu_only(facts: ResolvedFacts) -> list[Finding]:
    """A CUDA-capable family member (torch …) resolved to a build with no CUDA at all for the target:
    FAIL on a GPU profile, with where a CUDA 13 build comes from; PASS with the evidence otherwise."""
    from sparkenv.rules import cuda_builds

    versions = facts.versions
    verdicts = cuda_builds.evidence(versions, list(facts.edges), facts.base_versions)
    for key, record in facts.records.items():
        if verdicts.get(key, "") is None:
            verdicts[key] = cuda_builds.record_evidence(key, record)
    ties = cuda_builds.exact_ties(list(facts.edges))
    chain = facts.graph_chain
    files = {k: (p.wheels or [p.sdist or ""])[0] for k, p in facts.locked.items()}
    profile_desc = facts.profile.python_platform
    out = []
    fams = cuda_builds.families()
    cpu_only = {k for k, why in verdicts.items() if why is None and fams[k].conclusive}
    for key, why in sorted(verdicts.items()):
        if why is None and rules.is_cpu_label(versions[key]):
            continue  # a +cpu label: resolved() said it, in the words every stage uses for that label
        via = " → ".join(chain.get(key, [key]))
        desc = f"{key} {versions[key]} (via {via})"
        ev = (files.get(key, ""), f"via {via}")
        tied = sorted(t for t in ties.get(key, ()) if t in cpu_only)
        if why is None and not fams[key].conclusive:
            if tied:
                out.append(
                    Finding(
                        id=GotchaId.G1,
                        status=Status.FAIL,
                        summary=f"{desc} is pinned to {tied[0]} {versions[tied[0]]}, a CPU-only build",
                        subject=key,
                        evidence=ev,
                        fix=f"use {cuda_builds.instead(key, facts.profile.machine)}",
                    )
                )
            continue  # its CUDA comes from torch's libraries: nothing to tell from its own metadata
        if why is None:
            out.append(
                Finding(
                    id=GotchaId.G1,
                    status=Status.FAIL,
                    summary=f"{desc} is a CPU-only build for {profile_desc}: no CUDA label, no CUDA runtime "
                    "among its Requires-Dist, no CUDA library in its RECORD — on a Spark it runs on the CPU",
                    subject=key,
                    evidence=ev,
                    fix=f"use {cuda_builds.instead(key, facts.profile.machine)}",
                )
            )
        else:
            out.append(
                Finding(
                    id=GotchaId.G1,
                    status=Status.PASS,
                    summary=f"{desc} is a CUDA build: {why}",
                    subject=key,
                    evidence=ev,
                )
            )
    return out


def resolved_wheel_files(facts: ResolvedFacts) -> list[Finding]:
    """What each resolved binary wheel ships, read from its file list at lock: the per-CUDA-release
    libraries judged as the audit judges them installed (rules/cuda_per_release.py), CUDA libraries of
    another major it bundles (INFO: whether its code links them is read from the ELF at audit), and a
    wheel whose list could not be read (INFO, never a silent PASS)."""
    from sparkenv.rules import cuda_per_release

    target = rules.target_major()
    machine = facts.profile.machine
    out = []
    for key, files in sorted(facts.wheel_files.items()):
        if key not in facts.locked:
            continue
        ev = facts.evidence(key)
        desc = facts.describe(key)
        if isinstance(files, str):
            out.append(
                Finding(
                    id=GotchaId.G1,
                    status=Status.INFO,
                    summary=f"{desc}: its wheel's file list could not be read ({files}); its libraries are "
                    "checked only by `sparkenv audit` after install",
                    subject=key,
                    evidence=ev,
                )
            )
            continue
        got = cuda_per_release.verdict(key, files, machine)  # first: one of them is loaded, by choice
        if got is None and (linked := _wheel_links(facts, key, desc, ev, target)) is not None:
            out.append(linked)
            continue
        if got is not None:
            ok, what, fix = got
            out.append(
                Finding(
                    id=GotchaId.G1,
                    status=Status.PASS if ok else Status.FAIL,
                    summary=f"{desc} {what} (its wheel's file list)",
                    subject=key,
                    evidence=ev,
                    fix=None if ok else fix,
                )
            )
            continue
        other = sorted(
            {
                os.path.basename(f)
                for f in files
                if (m := rules.soname_major(os.path.basename(f))) and m != target
            }
        )
        if other:
            out.append(
                Finding(
                    id=GotchaId.G1,
                    status=Status.INFO,
                    summary=f"{desc} bundles {', '.join(other[:3])}{' …' if len(other) > 3 else ''} (CUDA "
                    f"{rules.soname_major(other[0])}): whether its code links it is read from the ELF by "
                    "`sparkenv audit` after install",
                    subject=key,
                    evidence=ev,
                )
            )
    return out


def _wheel_links(
    facts: ResolvedFacts, key: str, desc: str, ev: tuple[str, ...], target: int
) -> Finding | None:
    """What the shared objects of a GPU package's wheel link (DT_NEEDED, read at lock), judged with the
    audit's reading of one shared object (cuda_major.shared_object_evidence); unread: an INFO."""
    elves = facts.wheel_elves.get(key)
    if elves is None:
        return None
    found = [e for path, info in elves.objects for e in cuda_major.shared_object_evidence(path, info)]
    needed = [e for e in found if e.kind == "needed"]
    other = [e for e in needed if e.major != target]
    if elves.unread and not other:
        return Finding(
            id=GotchaId.G1,
            status=Status.INFO,
            summary=f"{desc}: what its shared objects link was not all read at lock ({elves.unread}); "
            "`sparkenv audit` reads it after install",
            subject=key,
            evidence=_cap([*ev, *(e.text for e in needed)]),
        )
    if other:
        return Finding(
            id=GotchaId.G1,
            status=cuda_major.OTHER_MAJOR,
            summary=f"{desc} needs CUDA {other[0].major}: {_short(other[0])} (read from its wheel) — target "
            f"is CUDA {target}",
            subject=key,
            evidence=_cap([*ev, *(e.text for e in other)]),
            fix=fix_for(key, "needed", bool(facts.profile.image)),
        )
    if needed:
        return Finding(
            id=GotchaId.G1,
            status=Status.PASS,
            summary=f"{desc} needs CUDA {target}: {_short(needed[0])} (read from its wheel)",
            subject=key,
            evidence=_cap([*ev, *(e.text for e in needed)]),
        )
    return None


# ---------------------------------------------------------------------------------------------------
# Stage.INSTALLED: an environment read from outside (sparkenv audit)


def installed(facts: AuditFacts) -> list[Finding]:
    binds = cuda_major.bindings(facts)
    target = rules.target_major()
    required_by: dict[str, list[str]] = defaultdict(list)
    for b in binds.values():
        for key in b.requires_keys:
            required_by[key].append(b.key)
    has_target = any(target in b.majors for b in binds.values())

    findings: list[Finding] = []
    for key, df in facts.dists.items():
        finding = _dist_finding(df, binds[key], target, sorted(required_by.get(key, [])), has_target, facts)
        if finding:
            findings.append(finding)
    findings += _problems(facts)
    findings.append(_summary(facts, binds, target))
    return findings


def _dist_finding(
    df: DistFacts, b: Binding, target: int, required_by: list[str], has_target: bool, facts: AuditFacts
) -> Finding | None:
    dist = df.dist
    who = f"{dist.key} {dist.version}"
    wrong_arch = [so for so in df.shared_objects if so.info.machine != facts.target.machine]
    problems: list[str] = []
    fixes: list[str] = []
    evidence = [e.text for e in b.evidence]
    status = Status.PASS

    if wrong_arch:
        status = Status.FAIL
        machines = sorted({so.info.machine for so in wrong_arch})
        problems.append(
            f"ships {len(wrong_arch)} {'/'.join(machines)} shared object(s) in a "
            f"{facts.target.machine} environment ({wrong_arch[0].relpath})"
        )
        fixes.append(
            f"reinstall it for {facts.target.machine} (a wheel copied from another machine, or "
            "installed with the wrong --platform)"
        )
        evidence = [f"{so.relpath} is {so.info.machine}" for so in wrong_arch] + evidence

    per_release = _per_release(df, status, problems, fixes, evidence, facts)
    if per_release is not None:
        return per_release

    cpu = [e for e in b.evidence if e.kind == "cpu"]
    if (
        dist.key == "torch"
        and not cpu
        and dist.files_known
        and not any(os.path.basename(f).startswith("libtorch_cuda") for f in df.so_paths)
    ):
        cpu = [Evidence(None, "cpu", "no libtorch_cuda.so among its files")]
        evidence.append(cpu[0].text)
    if cpu:  # the same status for every package and stage: see cuda_major.CPU_ONLY for why
        status = cuda_major.CPU_ONLY
        problems.append(f"is a CPU-only build ({cpu[0].text})")
        fixes.append(fix_for(dist.key, "cpu"))

    # Shipping a CUDA 12 library is not needing one: triton bundles libcupti.so.12 for its profiler and
    # nothing links it. Only what the loader will resolve (and names, labels, requirements) binds.
    binding = {e.major for e in b.evidence if e.major is not None and e.kind != "provides"}
    other = sorted(m for m in binding if m != target)
    bundled = [e for e in b.evidence if e.kind == "provides" and e.major not in binding and e.major != target]
    if other:
        major = other[-1]
        strongest = next(e for e in b.evidence if e.major == major)
        name = rules.name_match(dist.key)
        is_library = bool(name and name.library)
        also = f"; also CUDA {target} evidence" if target in b.majors else ""
        if is_library and not required_by and status is not Status.FAIL:
            status = Status.WARN
            problems.append(
                f"is CUDA {major} residue nobody installed requires ({_short(strongest)}{also})"
                + (f" next to CUDA {target} packages" if has_target else "")
            )
            fixes.append(f"pip uninstall {dist.key}")
        else:
            status = Status.FAIL
            chain = f", required by {', '.join(required_by)}" if required_by else ""
            problems.append(f"needs CUDA {major}: {_short(strongest)}{also}{chain} — target is CUDA {target}")
            fixes.append(_fix_for(dist.key, required_by, strongest.kind))
    elif not problems and bundled:
        names = ", ".join(sorted({e.soname or e.text for e in bundled}))
        return Finding(
            id=GotchaId.G1,
            status=Status.INFO,
            summary=f"{who} bundles {names} (CUDA {bundled[0].major}) that none of its shared objects links: "
            "loaded on demand if at all (e.g. by a profiler), not a binding",
            subject=dist.key,
            evidence=_cap(evidence),
        )
    elif not problems and b.majors:
        strongest = b.evidence[0]
        return Finding(
            id=GotchaId.G1,
            status=Status.PASS,
            summary=f"{who} needs CUDA {target}: {_short(strongest)}",
            subject=dist.key,
            evidence=_cap(evidence),
        )
    elif not problems:
        return None
    fix = "; ".join(dict.fromkeys(fixes))
    return Finding(
        id=GotchaId.G1,
        status=status,
        summary=f"{who} {'; '.join(problems)}",
        subject=dist.key,
        evidence=_cap(evidence),
        fix=fix,
    )


def _fix_for(key: str, required_by: list[str], kind: str) -> str:
    if required_by:
        return f"fix {', '.join(required_by)} first (it pulls {key} in), then pip uninstall {key}"
    return fix_for(key, kind)


def _per_release(
    df: DistFacts,
    status: Status,
    problems: list[str],
    fixes: list[str],
    evidence: list[str],
    facts: AuditFacts,
) -> Finding | None:
    """One library per CUDA release (bitsandbytes and its like): the judgement the lock makes on the
    wheel's file list (resolved_wheel_files), here on the installed files."""
    from sparkenv.rules import cuda_per_release

    got = cuda_per_release.verdict(df.dist.key, df.so_paths, facts.target.machine)
    if got is None:
        return None
    ok, what, fix = got
    libs = cuda_per_release.libraries(df.so_paths)
    evidence = evidence + [f"carries {names[0]}" for _, names in sorted(libs.items())]
    who = f"{df.dist.key} {df.dist.version}"
    if ok and status is Status.PASS:
        return Finding(
            id=GotchaId.G1,
            status=Status.PASS,
            summary=f"{who} {what}",
            subject=df.dist.key,
            evidence=_cap(evidence),
        )
    if not ok:
        problems.append(what)
        fixes.append(fix)
    return Finding(
        id=GotchaId.G1,
        status=Status.FAIL,
        summary=f"{who} {'; '.join(problems)}",
        subject=df.dist.key,
        evidence=_cap(evidence),
        fix="; ".join(fixes),
    )


def _problems(facts: AuditFacts) -> list[Finding]:
    out = []
    for p in facts.metadata_problems:
        out.append(
            Finding(
                id=GotchaId.G1,
                status=Status.ERROR,
                summary=f"{p.path}: {p.reason}; this distribution was not checked",
                subject=str(p.path),
                evidence=(),
                fix="reinstall the distribution (pip install --force-reinstall --no-deps)",
            )
        )
    for df in facts.dists.values():
        for fp in df.problems:
            out.append(
                Finding(
                    id=GotchaId.G1,
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
    return Finding(
        id=GotchaId.G1,
        status=Status.INFO,
        summary=f"read {len(facts.dists)} distributions and {facts.shared_object_count} shared objects; "
        f"{bound} tied to a CUDA major; environment {t.machine}, Python {t.python_version or 'unknown'}, "
        f"target CUDA {target}",
        subject="environment",
        evidence=(
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
# The host driver against a CUDA release (the gate's live rule above, and `sparkenv build --driver`):
# the versions and the dated table are sparkenv/cuda/driver.py's


def judge_driver(
    driver: str | None,
    cuda: str | None,
    *,
    compat_libcuda: str | None = None,
    gpu_name: str | None = None,
    where: str = "the image",
) -> Finding:
    """G1: the host's kernel-module driver against the CUDA release `where` was built for.

    `compat_libcuda`: version of a forward-compatibility libcuda (cuda-compat, /usr/local/cuda/compat)
    present in the image; `gpu_name`: the GPU, to tell whether forward compatibility can load on it.
    """
    if not driver:
        return Finding(
            id=GotchaId.G1,
            status=Status.SKIP,
            summary="no NVIDIA driver found: nothing to compare the CUDA release with",
            subject=drv.SUBJECT,
        )
    if not cuda:
        return Finding(
            id=GotchaId.G1,
            status=Status.INFO,
            summary=f"driver {driver}; CUDA release of {where} unknown",
            subject=drv.SUBJECT,
        )
    req = drv.requirement(cuda)
    if req is None:
        return Finding(
            id=GotchaId.G1,
            status=Status.WARN,
            summary=f"driver {driver}; CUDA {cuda} of {where} is not in sparkenv's driver table "
            f"(data/drivers.toml, reviewed {drv.reviewed()})",
            subject=drv.SUBJECT,
            evidence=(f"CUDA {cuda}",),
            fix="check NVIDIA's CUDA toolkit release notes for its minimum driver",
        )
    have = drv.version(driver)
    need = req.minimum
    source = drivers().source
    stale = (
        ""
        if req.known
        else f"; CUDA {req.release} is newer than the table (reviewed {drv.reviewed()}): judged by the "
        f"newest {cuda.split('.')[0]}.x release in it"
    )
    evidence = (f"kernel module {driver}", f"CUDA {req.release} needs >= {need} ({source})")
    if have >= drv.version(need):
        return Finding(
            id=GotchaId.G1,
            status=Status.PASS if req.known else Status.WARN,
            summary=f"driver {driver} runs CUDA {req.release} of {where} (needs >= {need}){stale}",
            subject=drv.SUBJECT,
            evidence=evidence,
            fix=None
            if req.known
            else "refresh sparkenv/data/drivers.toml from NVIDIA's table (" + source + ")",
        )
    fit = drv.newest_supported(have)
    upgrade = (
        f"update the host driver to >= {need} (DGX OS: sudo apt update && sudo apt full-upgrade, then reboot)"
        + (f", or use an image built for CUDA <= {fit}" if fit else "")
    )
    if compat_libcuda:
        unsupported = drivers().forward_compat.unsupported_gpus
        on_unsupported = bool(gpu_name) and any(n.lower() in (gpu_name or "").lower() for n in unsupported)
        if drv.version(compat_libcuda) >= drv.version(need) and not on_unsupported:
            return Finding(
                id=GotchaId.G1,
                status=Status.WARN,
                summary=f"driver {driver} is older than CUDA {req.release} needs (>= {need}); {where} runs "
                f"only through its forward-compatibility libcuda {compat_libcuda}, which loads on "
                "data-center GPUs only (cuInit error 804 elsewhere; NGC prints 'compatibility mode is "
                "UNAVAILABLE')",
                subject=drv.SUBJECT,
                evidence=(*evidence, f"forward-compatibility libcuda {compat_libcuda}"),
                fix=upgrade,
            )
        if on_unsupported:
            evidence = (
                *evidence,
                f"forward-compatibility libcuda {compat_libcuda}: not supported on {gpu_name}",
            )
    if req.floor is not None and have >= req.floor:
        return Finding(
            id=GotchaId.G1,
            status=Status.WARN,
            summary=f"driver {driver} is older than CUDA {req.release} of {where} needs (>= {need}): it runs "
            "only under CUDA minor version compatibility — PTX from this toolkit cannot be JIT-compiled "
            "(CUDA_ERROR_UNSUPPORTED_PTX_VERSION) and newer APIs fail with cudaErrorCallRequiresNewerDriver; "
            f"NGC's entrypoint reports 'built for NVIDIA Driver Release {drv.show(drv.version(need)[:2])} or "
            "later'",
            subject=drv.SUBJECT,
            evidence=evidence,
            fix=upgrade,
        )
    return Finding(
        id=GotchaId.G1,
        status=Status.FAIL,
        summary=f"driver {driver} cannot run CUDA {req.release} of {where}: it needs >= {need}"
        + (
            f" (CUDA {cuda.split('.')[0]}.x needs at least {drv.show(req.floor)} even under minor version "
            "compatibility)"
            if req.floor
            else ""
        )
        + stale,
        subject=drv.SUBJECT,
        evidence=evidence,
        fix=upgrade,
    )


def driver_for_image(driver: str, cuda: str | None, where: str) -> Finding:
    """`sparkenv build --driver` (or the build machine's own driver): the profile's CUDA against the driver
    the image will meet. Too old is a WARN at build time, not a FAIL: the image is built here but may run on
    a host with a newer driver; the gate on that host makes the same judgement a FAIL (`judge_driver`)."""
    found = judge_driver(driver, cuda, where=where)
    if found.status is Status.FAIL:
        from dataclasses import replace

        found = replace(found, status=Status.WARN)
    return found


def judge_libcuda(kernel_module: str | None, libraries: Iterable[str]) -> Finding | None:
    """G1: a user-space libcuda.so.<version> that is not the loaded kernel module's version fails every
    CUDA call with 'Driver/library version mismatch'. Forward-compatibility copies (data/drivers.toml
    `forward_compat.dirs`) differ on purpose and are left to `judge_driver`. None when nothing to say."""
    if not kernel_module:
        return None
    compat_dirs = drivers().forward_compat.dirs
    mismatched = []
    for path in libraries:
        v = drv.libcuda_version(path)
        if v is None or path.rsplit("/", 1)[0] in compat_dirs:
            continue
        if drv.version(v) != drv.version(kernel_module):
            mismatched.append((path, v))
    if not mismatched:
        return None
    path, v = mismatched[0]
    newer = drv.version(v) > drv.version(kernel_module)
    fix = (
        "reboot the host: the driver was upgraded but the old kernel module is still loaded"
        if newer
        else "remove the libcuda the image ships (a driver package installed in the image) so the NVIDIA "
        "container runtime mounts the host's, or reboot the host if its driver was just downgraded"
    )
    return Finding(
        id=GotchaId.G1,
        status=Status.FAIL,
        summary=f"user-space {path.rsplit('/', 1)[-1]} is not the loaded kernel module {kernel_module}: "
        "every CUDA call fails with 'Driver/library version mismatch'",
        subject="libcuda",
        evidence=tuple(f"{p}: {ver}" for p, ver in mismatched),
        fix=fix,
    )


# ---------------------------------------------------------------------------------------------------
# Stage.LIVE: the running machine (sparkenv gate)

# The same fix check, lock and audit give torch built for another CUDA major or for none.
LIVE_FIX = fix_for("torch", "label")
DRIVER_FIX = (
    "update the NVIDIA driver (DGX OS: sudo apt update && sudo apt full-upgrade), "
    "or use an image built for it"
)


def live(f: GateFacts) -> list[Finding]:
    if f.deep or f.section("torch") is not None:
        err = f.error_finding(GotchaId.G1, "torch", "torch")
        out = [err] if err else [_torch(f)]
    else:
        err = f.error_finding(GotchaId.G1, "torch_static", "torch")
        out = [err] if err else [_static(f)]
    out += _driver(f)
    out += _loader(f)
    return out


def _driver(f: GateFacts) -> list[Finding]:
    """The driver against the CUDA release torch was built for, by the one driver judgement
    (sparkenv.cuda.driver, NVIDIA's dated table); nothing when the driver or torch's CUDA is unknown."""
    driver = f.driver_version
    if f.deep or f.section("torch") is not None:
        version, cuda = (f.torch or {}).get("version"), (f.torch or {}).get("cuda")
    else:
        s = f.section("torch_static") or {}
        version, cuda = s.get("version"), s.get("cuda") if s.get("library") else None
    if not driver or not cuda:
        return []
    return [judge_driver(driver, str(cuda), gpu_name=f.gpu_name, where=f"PyTorch {version}")]


def _static(f: GateFacts) -> Finding:
    s = f.section("torch_static") or {}
    if not s.get("found"):
        return Finding(
            id=GotchaId.G1,
            status=Status.SKIP,
            summary="torch is not installed: nothing CUDA to check",
            subject="torch",
        )
    version = s.get("version") or "(version unknown)"
    if s.get("error"):
        return Finding(
            id=GotchaId.G1,
            status=Status.ERROR,
            summary=f"torch {version}: cannot read its files: {s['error']}",
            subject="torch",
        )
    needed: list[dict[str, Any]] = s.get("needed") or []
    lib = s.get("library")
    cuda = s.get("cuda")
    if not lib:
        how = "torch/version.py says cuda = None" if not cuda else f"torch/version.py says CUDA {cuda}"
        return Finding(
            id=GotchaId.G1,
            status=Status.FAIL,
            summary=f"torch {version} is a CPU-only build ({how}; no torch/lib/libtorch_cuda.so)",
            subject="torch",
            evidence=(),
            fix=LIVE_FIX,
        )
    target = rules.target_major()
    evidence = tuple(
        f"{lib} → {n['soname']}: " + (f"{n['found']} ({n['how']})" if n.get("found") else str(n.get("how")))
        for n in needed
    )
    wrong = [n for n in needed if n.get("major") is not None and n["major"] != target]
    label_major = int(str(cuda).split(".")[0]) if cuda and str(cuda).split(".")[0].isdigit() else None
    if wrong or (label_major is not None and label_major != target):
        what = (
            f"{lib} links {', '.join(n['soname'] for n in wrong)} (CUDA {wrong[0]['major']})"
            if wrong
            else f"torch/version.py says CUDA {cuda}"
        )
        return Finding(
            id=GotchaId.G1,
            status=Status.FAIL,
            summary=f"torch {version} needs CUDA {wrong[0]['major'] if wrong else label_major}: {what} "
            f"— target is CUDA {target}",
            subject="torch",
            evidence=evidence,
            fix=LIVE_FIX,
        )
    missing = [n for n in needed if not n.get("found")]
    if missing:
        first = missing[0]
        return Finding(
            id=GotchaId.G1,
            status=Status.FAIL,
            summary=f"torch {version}: {lib} needs {first['soname']}, which the loader will not find "
            f"({first.get('how')})",
            subject="torch",
            evidence=evidence,
            fix="install the CUDA 13 runtime wheels torch requires (pip install --force-reinstall torch from "
            "the cu130 index), or put the CUDA 13 runtime on the loader path",
        )
    alien = [n for n in needed if n.get("machine")]
    if alien:
        return Finding(
            id=GotchaId.G1,
            status=Status.FAIL,
            summary=f"torch {version}: {alien[0]['found']} is built for {alien[0]['machine']}, "
            f"not {s.get('machine')}",
            subject="torch",
            evidence=evidence,
            fix=LIVE_FIX,
        )
    major = label_major or target
    proof = next((n for n in needed if n["soname"].startswith("libcudart")), needed[0] if needed else None)
    how = (
        f"{lib.rsplit('/', 1)[-1]} → {proof['soname']} found at {proof['found']}" if proof else f"{lib} read"
    )
    ngc = " (NGC build: no +cu label, as expected)" if rules.ngc_release(str(version)) else ""
    if f.driver_version is None and not f.gpu0:
        return Finding(
            id=GotchaId.G1,
            status=Status.WARN,
            summary=f"torch {version} built for CUDA {cuda or major}{ngc}, but no NVIDIA driver or GPU is "
            "visible",
            subject="torch",
            evidence=evidence,
            fix="run the container with --gpus all (or the NVIDIA runtime)",
        )
    return Finding(
        id=GotchaId.G1,
        status=Status.PASS,
        summary=f"static: torch {version} built for CUDA {cuda or major}{ngc}; {how}",
        subject="torch",
        evidence=(
            *evidence,
            "the first CUDA operation is not run by default: --deep (or SPARKENV_GATE_DEEP=1) runs it",
        ),
    )


def _torch(f: GateFacts) -> Finding:
    probe = f.section("torch") or {}
    stages = f.torch_stages
    target = rules.target_major()
    if "import_error" in stages:
        error = stages["import_error"]["error"]
        if error.startswith("ModuleNotFoundError") and "'torch'" in error:
            return Finding(
                id=GotchaId.G1,
                status=Status.SKIP,
                summary="torch is not installed: nothing CUDA to check",
                subject="torch",
            )
        return Finding(
            id=GotchaId.G1,
            status=Status.FAIL,
            summary=f"import torch fails: {error}",
            subject="torch",
            evidence=(error,),
            fix=LIVE_FIX,
        )
    where = "the first CUDA operation" if "devices" in stages else "import torch"
    if probe.get("timed_out"):  # killed by us at the deadline: the check could not run, not a verdict
        return Finding(
            id=GotchaId.G1,
            status=Status.ERROR,
            summary=f"{where} did not finish in time (killed at the gate's deadline)",
            subject="torch",
            evidence=tuple(probe.get("stderr_tail") or ()),
        )
    if probe.get("signal"):
        tail = f": {probe['stderr_tail'][-1]}" if probe.get("stderr_tail") else ""
        return Finding(
            id=GotchaId.G1,
            status=Status.FAIL,
            summary=f"{where} was killed by {probe['signal']}{tail}",
            subject="torch",
            evidence=tuple(probe.get("stderr_tail") or ()),
            fix=LIVE_FIX,
        )
    t = f.torch
    if t is None:
        tail = (probe.get("stderr_tail") or ["no output"])[-1]
        return Finding(
            id=GotchaId.G1,
            status=Status.ERROR,
            summary=f"the torch probe gave no answer: {tail}",
            subject="torch",
        )
    version, cuda = t.get("version"), t.get("cuda")
    if not cuda:
        return Finding(
            id=GotchaId.G1,
            status=Status.FAIL,
            summary=f"torch {version} is a CPU-only build (torch.version.cuda is None)",
            subject="torch",
            evidence=(),
            fix=LIVE_FIX,
        )
    major = int(str(cuda).split(".")[0])
    label = " (NGC build: no +cu label, as expected)" if rules.ngc_release(str(version)) else ""
    if major != target:
        return Finding(
            id=GotchaId.G1,
            status=Status.FAIL,
            summary=f"torch {version} is built for CUDA {cuda} — target is CUDA {target}",
            subject="torch",
            evidence=(),
            fix=LIVE_FIX,
        )
    if "cuda_error" in stages or "first_op_error" in stages:
        error = (stages.get("cuda_error") or stages.get("first_op_error"))["error"]
        return Finding(
            id=GotchaId.G1,
            status=Status.FAIL,
            summary=f"torch {version} (CUDA {cuda}): the first CUDA operation fails: {error}",
            subject="torch",
            evidence=(error,),
            fix="check the driver (nvidia-smi) and that no CUDA 12 library shadows CUDA 13",
        )
    devices = stages.get("devices") or {}
    if not devices.get("available"):
        return Finding(
            id=GotchaId.G1,
            status=Status.WARN,
            summary=f"torch {version} built for CUDA {cuda}{label}, but no GPU is visible",
            subject="torch",
            evidence=(),
            fix="run the container with --gpus all (or the NVIDIA runtime)",
        )
    d = f.device or {}
    cache = f.raw.get("deep_cache") or {}
    when = (
        f" (deep probe of {cache.get('taken_at')} remembered for this image, driver and GPU)"
        if cache.get("hit")
        else ""
    )
    return Finding(
        id=GotchaId.G1,
        status=Status.PASS,
        summary=f"torch {version} built for CUDA {cuda}{label}; first CUDA operation ran in "
        f"{d.get('first_op_s', '?')} s{when}",
        subject="torch",
        evidence=(f"import {t.get('import_s')} s", f"cudnn {t.get('cudnn')}"),
    )


def _loader(f: GateFacts) -> list[Finding]:
    loader = f.section("loader")
    if loader is None:
        return []
    hits = loader.get("libcudart12") or []
    if not hits:
        return []
    return [
        Finding(
            id=GotchaId.G1,
            status=Status.WARN,
            summary=f"a CUDA 12 runtime is on the loader path: {', '.join(hits[:3])}",
            subject="libcudart.so.12",
            evidence=tuple(hits),
            fix="remove it from LD_LIBRARY_PATH / ldconfig, or a CUDA 12 extension will load it silently",
        )
    ]


RULES = (
    Rule(
        Stage.DECLARED,
        declared,
        "each requirement's name (-cu12), version label (+cu128, +cpu), exact pin of a versioned CUDA "
        "wheel, index URLs and wheel URLs (for another CPU), markers evaluated for the target",
    ),
    Rule(
        Stage.RESOLVED,
        resolved,
        "every resolved file's name, label and Requires-Dist for the target platform, with the chain "
        "that pulled it in; whether a resolved torch (onnxruntime-gpu, jax; torchvision and torchaudio "
        "through the torch they pin) shows CUDA at all: label, CUDA runtime requirement, CUDA library in "
        "its RECORD; each binary wheel's file list (zip central directory): one library per CUDA release "
        "and none for the target, CUDA libraries of another major it bundles",
    ),
    Rule(
        Stage.INSTALLED,
        installed,
        "every distribution's name, label, Requires-Dist, install paths and the DT_NEEDED sonames of its "
        "shared objects; CPU-only torch; shared objects of another CPU; one library per CUDA release "
        "(bitsandbytes' kind) without one for the target",
    ),
    Rule(
        Stage.LIVE,
        live,
        "by default from files: torch's version label, libtorch_cuda.so's CUDA libraries resolved the "
        "way the loader will, the driver (/proc/driver/nvidia/version or NVML) against the minimum for "
        "that CUDA major; with --deep torch.version.cuda and the first CUDA operation in an isolated "
        "process; a CUDA 12 runtime on the loader path",
    ),
)

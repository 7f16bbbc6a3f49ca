"""G1: every distribution bound to a CUDA major other than the target's, CPU-only torch, wrong-arch
shared objects, bitsandbytes without a CUDA 13 library (pure function of the audit facts)."""

from __future__ import annotations

import os
import re
from collections import defaultdict

from sparkenv import datafiles
from sparkenv.audit.cuda_binding import Binding, Evidence
from sparkenv.audit.scan import AuditFacts, DistFacts
from sparkenv.cuda import rules
from sparkenv.report import Finding, Status

MAX_EVIDENCE = 12
_TORCH_FAMILY = {"torch", "torchvision", "torchaudio"}
CU130_INDEX = "https://download.pytorch.org/whl/cu130"


def check(facts: AuditFacts, binds: dict[str, Binding]) -> list[Finding]:
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

    if dist.key == "bitsandbytes":
        return _bitsandbytes(df, target, status, problems, fixes, evidence, facts)

    cpu = [e for e in b.evidence if e.kind == "cpu"]
    if (
        dist.key == "torch"
        and not cpu
        and dist.files_known
        and not any(os.path.basename(f).startswith("libtorch_cuda") for f in df.so_paths)
    ):
        cpu = [Evidence(None, "cpu", "no libtorch_cuda.so among its files")]
        evidence.append(cpu[0].text)
    if cpu:
        if dist.key in _TORCH_FAMILY:
            status = Status.FAIL
            problems.append(f"is a CPU-only build ({cpu[0].text})")
            fixes.append(f"install the CUDA 13 build from {CU130_INDEX} or use the NGC image")
        elif status is Status.PASS:
            status = Status.WARN
            problems.append("is a CPU-only build")
            fixes.append(f"install its CUDA {target} build if it should use the GPU")

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
            fixes.append(_fix_for(dist.key, required_by, name.cuda13_name if name else None))
    elif not problems and bundled:
        names = ", ".join(sorted({e.soname or e.text for e in bundled}))
        return Finding(
            "G1",
            Status.INFO,
            f"{who} bundles {names} (CUDA {bundled[0].major}) that none of its shared objects links: "
            "loaded on demand if at all (e.g. by a profiler), not a binding",
            dist.key,
            _cap(evidence),
        )
    elif not problems and b.majors:
        strongest = b.evidence[0]
        return Finding(
            "G1", Status.PASS, f"{who} needs CUDA {target}: {_short(strongest)}", dist.key, _cap(evidence)
        )
    elif not problems:
        return None
    return Finding("G1", status, f"{who} {'; '.join(problems)}", dist.key, _cap(evidence), "; ".join(fixes))


def _fix_for(key: str, required_by: list[str], cuda13_name: str | None) -> str:
    if required_by:
        return f"fix {', '.join(required_by)} first (it pulls {key} in), then pip uninstall {key}"
    if key in _TORCH_FAMILY:
        return f"reinstall from {CU130_INDEX} or use the NGC image"
    if cuda13_name:
        return f"replace it with {cuda13_name}, or use the NGC image"
    return (
        "install a CUDA 13 build (the cu130 index, a newer version with a CUDA 13 wheel) or use the NGC image"
    )


def _bitsandbytes(
    df: DistFacts,
    target: int,
    status: Status,
    problems: list[str],
    fixes: list[str],
    evidence: list[str],
    facts: AuditFacts,
) -> Finding:
    regex = re.compile(datafiles.load("packages")["bitsandbytes"]["library_regex"])
    libs: dict[int, str] = {}
    for rel in df.so_paths:
        m = regex.search(os.path.basename(rel))
        if m:
            digits = m.group(1)
            libs.setdefault(int(digits[:-1]) if len(digits) > 2 else int(digits), os.path.basename(rel))
    evidence = evidence + [f"carries {name}" for _, name in sorted(libs.items())]
    who = f"{df.dist.key} {df.dist.version}"
    if target in libs and status is Status.PASS:
        return Finding(
            "G1",
            Status.PASS,
            f"{who} carries a CUDA {target} library ({libs[target]})",
            df.dist.key,
            _cap(evidence),
        )
    if target not in libs:
        found = ", ".join(sorted(libs.values())) or "no CUDA library at all"
        problems.append(f"has no CUDA {target} library ({found}); it picks its library by torch.version.cuda")
        fixes.append("upgrade to bitsandbytes >= 0.48, which ships libbitsandbytes_cuda130")
    return Finding(
        "G1", Status.FAIL, f"{who} {'; '.join(problems)}", df.dist.key, _cap(evidence), "; ".join(fixes)
    )


def _problems(facts: AuditFacts) -> list[Finding]:
    out = []
    for p in facts.metadata_problems:
        out.append(
            Finding(
                "G1",
                Status.ERROR,
                f"{p.path}: {p.reason}; this distribution was not checked",
                str(p.path),
                (),
                "reinstall the distribution (pip install --force-reinstall --no-deps)",
            )
        )
    for df in facts.dists.values():
        for fp in df.problems:
            out.append(
                Finding(
                    "G1",
                    Status.WARN,
                    f"{fp.path} ({fp.owner}): {fp.reason}; not checked",
                    fp.path,
                    (f"owner: {fp.owner}",),
                    f"pip install --force-reinstall --no-deps {fp.owner}",
                )
            )
    return out


def _summary(facts: AuditFacts, binds: dict[str, Binding], target: int) -> Finding:
    bound = sum(1 for b in binds.values() if b.majors)
    t = facts.target
    return Finding(
        "G1",
        Status.INFO,
        f"read {len(facts.dists)} distributions and {facts.shared_object_count} shared objects; "
        f"{bound} tied to a CUDA major; environment {t.machine}, Python {t.python_version or 'unknown'}, "
        f"target CUDA {target}",
        "environment",
        (
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

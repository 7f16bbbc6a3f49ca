"""G7 — GPU code that does not run on the target GPU (and NVFP4 on SM121): every stage's judgement.

resolved: the same judgement of each package, on the fatbin headers of its resolved wheel's shared
objects read at lock (lock/wheel_elf.py, within a budget; what was not read is said, never passed);
installed: the GPU code (fatbin targets) of every shared object against the target GPU, judged per
package by sparkenv/cuda/coverage.py (which suffix runs where is data/kernels.toml); Triton's ptxas
(audit, and build's self-audit of its image);
live: the GPU's capability, torch's arch list, the same kernel coverage for the live GPU, Triton's
ptxas and TORCH_CUDA_ARCH_LIST as the workload will see them, NVFP4 intent (gate).
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import replace
from functools import partial
from typing import TYPE_CHECKING

from sparkenv.core.report import Finding, GotchaId, Status
from sparkenv.cuda import coverage, toolchain
from sparkenv.environment.intent import nvfp4_intent
from sparkenv.knowledge import gate
from sparkenv.knowledge import toolchain as toolchain_data
from sparkenv.rules import Lazy, Rule, Stage, g7_coverage

if TYPE_CHECKING:
    from sparkenv.facts.installed import AuditFacts
    from sparkenv.facts.live import GateFacts
    from sparkenv.facts.resolved import ResolvedFacts

_finding = partial(Finding, GotchaId.G7)  # every finding of this module is G7's


# ---------------------------------------------------------------------------------------------------
# Stage.INSTALLED: every distribution's kernels against the target GPU (--gpu, GB10 by default)


def installed(facts: AuditFacts) -> list[Finding]:
    cap = facts.gpu
    if cap is None:
        return [
            _finding(
                status=Status.SKIP,
                summary="kernel coverage not checked (--gpu none)",
                subject="kernels",
            )
        ]
    gpu = coverage.gpu_label(cap)
    out: list[Finding] = []
    objects = deep = 0
    for key, d in sorted(facts.dists.items()):
        if not d.kernels:
            continue
        objects += len(d.kernels)
        deep += sum(1 for o in d.kernels if set(o.sections) - {".nv_fatbin"})
        finding = package_finding(key, d.dist.version, d.kernels, cap, gpu)
        if finding is not None:
            out.append(finding)
    out.append(_census(objects, len(out), deep, gpu))
    if facts.triton is not None:
        out.append(judge_triton_ptxas(facts.triton, cap, live=False))
    return out


# ---------------------------------------------------------------------------------------------------
# Stage.RESOLVED: the kernels of each GPU package's resolved wheel, read at lock, for the profile's GPU


def resolved(facts: ResolvedFacts) -> list[Finding]:
    """`package_finding` on the objects read from each wheel (the audit's judgement, the same fatbin
    reader fed by the wheel's bytes); a wheel whose objects were not all read and whose read part shows
    nothing that runs is an INFO, never a PASS or a FAIL on half the evidence."""
    if not facts.wheel_elves:
        return []
    cap = coverage.gb10()
    gpu = coverage.gpu_label(cap)
    out: list[Finding] = []
    unread: list[str] = []  # no GPU code among what could be read: one line for all, in the census
    objects = deep = 0
    for key, elves in sorted(facts.wheel_elves.items()):
        if key not in facts.locked:
            continue
        version = facts.locked[key].version
        if elves.unread and not elves.kernels:  # nothing with GPU code among what could be read
            unread.append(f"{key} {version}: {elves.unread}")
            continue
        objects += len(elves.objects)
        deep += sum(1 for o in elves.kernels if set(o.sections) - {".nv_fatbin"})
        found = list(elves.kernels)
        if elves.unread:  # a lower bound: what was not read may hold the code that runs
            found = [replace(o, complete=False) for o in found]
        finding = package_finding(key, version, found, cap, gpu) if found else None
        if elves.unread and (finding is None or finding.status is not Status.PASS):
            chain = facts.chain(key)
            who = f"{key} {version}" + (f" (via {chain})" if chain != key else "")
            finding = _finding(
                status=Status.INFO,
                summary=f"{who}: its GPU code was not all read at lock ({elves.unread})"
                + (f"; what was read: {finding.summary}" if finding is not None else "")
                + "; `sparkenv audit` reads it after install",
                subject=key,
                evidence=finding.evidence if finding is not None else facts.evidence(key),
            )
        if finding is not None:
            out.append(_at_lock(finding, facts.chain(key), key))
    census = _census(objects, len(out), deep, gpu, "resolved wheel")
    if unread:
        names = ", ".join(u.split(":", 1)[0] for u in unread)
        census = replace(
            census,
            summary=f"{census.summary}; not read at lock (past the read budget): {names} — `sparkenv audit` "
            "reads their GPU code after install",
            evidence=(*census.evidence, *unread),
        )
    out.append(census)
    return out


def _at_lock(f: Finding, chain: str, key: str) -> Finding:
    """The audit's words, said of a wheel: where it was read and the chain that pulled it in."""
    if "read at lock" in f.summary:
        return f
    via = f", via {chain}" if chain != key else ""
    return replace(f, summary=f"{f.summary} (read from its wheel{via})")


def _census(
    objects: int, carriers: int, deep: int, gpu: str, what: str = "installed distribution"
) -> Finding:
    where = f"; {deep} with fatbins in data sections" if deep else ""
    summary = (
        f"read the GPU code of {objects} shared object{'s' if objects != 1 else ''} in {carriers} "
        f"{what.split()[-1]}{'s' if carriers != 1 else ''} (fatbin headers{where}); target {gpu}"
        if objects
        else f"no {what} carries CUDA kernels; target {gpu}"
    )
    return _finding(
        status=Status.INFO,
        summary=summary,
        subject="kernels",
        evidence=(f"rules: {coverage.kernels_source()}",),
    )


# ---------------------------------------------------------------------------------------------------
# Shared by the installed and live rules: a package's GPU code, Triton's ptxas, TORCH_CUDA_ARCH_LIST
# (what they read is parsed in sparkenv/cuda/coverage.py and sparkenv/cuda/toolchain.py)


def package_finding(
    key: str, version: str, objects: Iterable[coverage.ObjectKernels], cap: coverage.Capability, gpu: str
) -> Finding | None:
    """One G7 finding for a package, judged on the union of its objects' targets (a package's kernels
    are spread over its objects: libcufftw.so.12 carries one sm_75 helper cubin while libcufft.so.12
    holds cuFFT's kernels for every GPU). None when none of its objects carries GPU code."""
    objects = [o for o in objects if o.targets or not o.complete]
    if not objects:
        return None
    got = _package_coverage(objects, cap)
    evidence = tuple(_object_evidence(o) for o in sorted(objects, key=lambda o: o.path))
    name = f"{key} {version}"
    n = len(objects)
    where = f"{n} object{'s' if n != 1 else ''} with kernels"
    if got.status is Status.PASS:
        return _finding(
            status=Status.PASS,
            summary=f"{name}: {where}; runs on {gpu} ({got.reason})",
            subject=key,
            evidence=evidence,
        )
    shown = ", ".join(o.path for o in objects[:3]) + (f" and {n - 3} more" if n > 3 else "")
    if got.status is Status.FAIL:
        return _finding(
            status=Status.FAIL,
            summary=f"{name} ({shown}) cannot run on {gpu}: {got.reason} — fails with 'no kernel image is "
            f"available for execution on the device'",
            subject=key,
            evidence=evidence,
            fix=f"install a build of {key} with kernels for {coverage.cap_text(cap)} (sm_{cap[0]}{cap[1]}, "
            f"or sm_{cap[0]}0/sm_{cap[0]}0f which run on the whole {cap[0]}.x family; not an 'a' build for "
            f"another capability), e.g. the CUDA 13 wheel or the NGC image's build; or rebuild it with "
            f'TORCH_CUDA_ARCH_LIST="{coverage.cap_text(cap)}"',
        )
    if got.status is Status.WARN:
        return _finding(
            status=Status.WARN,
            summary=f"{name} ({shown}): {got.reason}",
            subject=key,
            evidence=evidence,
            fix=f"prefer a build of {key} with sm_{cap[0]}{cap[1]} (or sm_{cap[0]}0) cubins, or run it once "
            "while building the image so the JIT cache ships warm",
        )
    problems = "; ".join(f"{o.path}: {o.problem}" for o in objects if o.problem)
    return _finding(
        status=Status.INFO,
        summary=f"{name} ({shown}): {got.reason}" + (f" — {problems}" if problems else ""),
        subject=key,
        evidence=evidence,
    )


def _package_coverage(
    objects: list[coverage.ObjectKernels], cap: coverage.Capability
) -> g7_coverage.Coverage:
    """The coverage verdict on the union of the objects' targets, payload sizes summed when all known."""
    targets = sorted({t for o in objects for t in o.targets})
    payload: dict[str, int] = {}
    for o in objects:
        for name, n in (o.payload or {}).items():
            payload[name] = payload.get(name, 0) + n
    sized = all(o.payload is not None for o in objects)
    complete = all(o.complete for o in objects)
    return g7_coverage.judge(targets, cap, complete, payload if sized else None)


def _object_evidence(o: coverage.ObjectKernels) -> str:
    sections = f" [in {', '.join(o.sections)}]" if o.sections and tuple(o.sections) != (".nv_fatbin",) else ""
    return f"{o.path}: {', '.join(o.targets) or 'nothing read'}{sections}" + (
        f" ({o.problem})" if o.problem else ""
    )


def _ptxas_for(tools: toolchain.TritonTools, cap: coverage.Capability) -> tuple[str, str, str]:
    """(the bundled tool, the variable that overrides it) Triton uses for this capability, and the other
    variable (set, it is not the one read)."""
    spec = toolchain_data().triton
    blackwell = cap[0] >= spec.blackwell_from_major and spec.blackwell_tool in tools.bundled
    if blackwell:
        return spec.blackwell_tool, spec.blackwell_env, spec.default_env
    return spec.default_tool, spec.default_env, spec.blackwell_env


def judge_triton_ptxas(tools: toolchain.TritonTools, cap: coverage.Capability, live: bool) -> Finding:
    """G7: the ptxas Triton will run for this GPU accepts its arch-specific target. `live` (the gate):
    the environment is the workload's, so a ptxas that rejects the target is a FAIL; in the audit the
    variables may still be set at run time, so it is a WARN."""
    tool, var, other = _ptxas_for(tools, cap)
    need = toolchain.min_ptxas(cap)
    arch = f"sm_{cap[0]}{cap[1]}a"
    subject = "triton-ptxas"
    name = f"{tools.name} {tools.version}"
    path = tools.env.get(var)
    if path:
        release = tools.env_release.get(path)
        source = f"{var}={path}"
        if release is None:
            return _finding(
                status=Status.FAIL if live else Status.WARN,
                summary=f"{name}: {source} is not a readable ptxas: Triton cannot compile kernels for {arch}",
                subject=subject,
                evidence=(source,),
                fix=f"point {var} at a CUDA 13 ptxas (/usr/local/cuda/bin/ptxas) or unset it",
            )
    else:
        release = tools.bundled.get(tool)
        source = f"its bundled {tool}"
        if tool not in tools.bundled:
            return _finding(
                status=Status.INFO,
                summary=f"{name}: no bundled {tool} found",
                subject=subject,
            )
    note = ""
    if tools.env.get(other) and not path:
        note = f"; {other} is set but Triton uses {var} for capability {coverage.cap_text(cap)}"
    evidence = tuple(f"{t}: CUDA {r or '?'}" for t, r in sorted(tools.bundled.items())) + tuple(
        f"{k}={v}" for k, v in sorted(tools.env.items())
    )
    if need is None or release is None:
        return _finding(
            status=Status.INFO,
            summary=f"{name} compiles with {source} (CUDA {release or 'release not read'}); no known minimum "
            f"for {arch}{note}",
            subject=subject,
            evidence=evidence,
        )
    if toolchain.release_tuple(release) >= toolchain.release_tuple(need):
        return _finding(
            status=Status.PASS,
            summary=f"{name} compiles with {source} (CUDA {release}), which accepts {arch} "
            f"(needs CUDA >= {need}){note}",
            subject=subject,
            evidence=evidence,
        )
    return _finding(
        status=Status.FAIL if live else Status.WARN,
        summary=f"{name} compiles with {source} (CUDA {release}), which rejects {arch} (needs CUDA >= "
        f"{need}): torch.compile and every Triton kernel fail with \"Value '{arch}' is not defined for "
        f"option 'gpu-name'\"{note}",
        subject=subject,
        evidence=evidence,
        fix=f"export {var}=/usr/local/cuda/bin/ptxas (a CUDA 13 ptxas; NGC images ship one)",
    )


def judge_arch_list(value: str | None, cap: coverage.Capability, where: str) -> Finding | None:
    """G7: extensions compiled under this TORCH_CUDA_ARCH_LIST run on `cap`. None when unset (then
    torch compiles for the GPU it sees, or for its own arch list without one)."""
    if value is None:
        return None
    subject = "TORCH_CUDA_ARCH_LIST"
    targets = toolchain.parse_arch_list(value)
    if targets is None or not targets:
        return _finding(
            status=Status.WARN,
            summary=f'TORCH_CUDA_ARCH_LIST="{value}" ({where}) is not a list of capabilities like "12.0 '
            '12.1+PTX"',
            subject=subject,
            evidence=(value,),
            fix=f'set TORCH_CUDA_ARCH_LIST="{coverage.cap_text(cap)}"',
        )
    got = g7_coverage.judge(targets, cap)
    gpu = coverage.gpu_label(cap)
    if got.status is Status.PASS:
        return _finding(
            status=Status.PASS,
            summary=f'TORCH_CUDA_ARCH_LIST="{value}" ({where}) builds extensions that run on {gpu} '
            f"({got.reason})",
            subject=subject,
        )
    status = Status.WARN if got.status in (Status.WARN, Status.INFO) else Status.FAIL
    return _finding(
        status=status,
        summary=f'TORCH_CUDA_ARCH_LIST="{value}" ({where}): extensions compiled under it '
        + (
            f"cannot run on {gpu} ({got.reason})"
            if status is Status.FAIL
            else f"run on {gpu} only after a JIT ({got.reason})"
        ),
        subject=subject,
        evidence=(value,),
        fix=f'set TORCH_CUDA_ARCH_LIST="{coverage.cap_text(cap)}" (or add it) before anything is compiled',
    )


# ---------------------------------------------------------------------------------------------------
# Stage.LIVE


def live(f: GateFacts) -> list[Finding]:
    cap = f.capability
    if cap is None:
        return [
            _finding(
                status=Status.SKIP,
                summary="no GPU capability known (no GPU, or torch/nvidia-smi missing)",
                subject="capability",
            )
        ]
    out = _live_coverage(f, cap)
    if not f.is_gb10:
        return [
            _finding(
                status=Status.SKIP,
                summary=f"capability {cap} is not a GB10 (12, 1)",
                subject="capability",
            ),
            *out,
        ]
    out.append(_torch_arch_list(cap, (f.device or {}).get("arch_list")))
    intent = nvfp4_intent(f.workload, f.env)
    if intent and f.section("kernels"):
        out.append(_kernels(intent, f.section("kernels") or {}))
    elif intent:
        out.append(_nvfp4_unread(f, intent))
    return out


def _torch_arch_list(cap: tuple[int, int], arch: list[str] | None) -> Finding:
    """On a GB10: does torch's arch list run on SM121, by the same judgement as every package's."""
    if arch is None:
        return _finding(
            status=Status.PASS,
            summary=f"capability {cap}: a GB10 (torch arch list not read)",
            subject="capability",
        )
    verdict = g7_coverage.judge(arch, cap)
    if verdict.status is Status.PASS:
        return _finding(
            status=Status.PASS,
            summary=f"capability {cap}: GB10; torch arch list {', '.join(arch)} runs on "
            "SM121 (sm_120/compute_120)",
            subject="capability",
        )
    if verdict.status is Status.WARN:
        return _finding(
            status=Status.WARN,
            summary=f"capability {cap}: GB10; torch arch list {', '.join(arch)}: {verdict.reason}",
            subject="capability",
            evidence=tuple(arch),
            fix="use a CUDA 13 torch (cu130 index or NGC) built with sm_120",
        )
    return _finding(
        status=Status.FAIL,
        summary=f"capability {cap}: GB10, but torch was built for {', '.join(arch)}: "
        "no sm_120/compute_120 code to run on SM121",
        subject="capability",
        evidence=tuple(arch),
        fix="use a CUDA 13 torch (cu130 index or NGC) built with sm_120",
    )


def _nvfp4_unread(f: GateFacts, intent: str) -> Finding:
    """NVFP4 intended, and no kernel package's code read to tell whether it targets sm_121a."""
    return _finding(
        status=Status.WARN,
        summary=f"NVFP4 is intended ({intent}): on SM121 it runs ~32% slower than FP8 unless the "
        "kernels target sm_121a, and no installed NVFP4 kernel package was found to read "
        + (
            "(none of gate.toml's nvfp4.kernel_packages)"
            if f.section("kernels") is not None
            else f"({f.probe_error('kernels') or 'kernels not in this snapshot'})"
        ),
        subject="nvfp4",
        evidence=(intent,),
        fix="stay on FP8 unless your kernels are built for sm_121a "
        "(cuobjdump --list-elf on the kernel library shows sm_121a)",
    )


def _live_coverage(f: GateFacts, cap: tuple[int, int]) -> list[Finding]:
    """Every package's kernels, Triton's ptxas and TORCH_CUDA_ARCH_LIST, for the live GPU."""
    from sparkenv.environment import kernels

    out: list[Finding] = []
    gpu = coverage.gpu_label(cap)
    facts = f.section("kernel_coverage")
    if facts is not None and facts.get("packages") is None:
        out.append(
            _finding(
                status=Status.INFO,
                summary="the kernels of every package are not read in the default mode: `--deep` reads them "
                "here; `sparkenv audit` and `sparkenv build` judge them with the same rule",
                subject="kernels",
            )
        )
    if facts is not None:
        for key, pkg in sorted((facts.get("packages") or {}).items()):
            if not isinstance(pkg, dict):
                continue
            objects = kernels.from_json(pkg.get("objects") or [])
            finding = package_finding(key, str(pkg.get("version", "?")), objects, cap, gpu)
            if finding is not None:
                out.append(finding)
        triton = kernels.triton_from_json(facts.get("triton"))
        if triton is not None:
            out.append(judge_triton_ptxas(triton, cap, live=True))
    elif f.probe_error("kernel_coverage"):
        out.append(
            _finding(
                status=Status.ERROR,
                summary=f"kernel_coverage probe failed: {f.probe_error('kernel_coverage')}",
                subject="kernels",
            )
        )
    arch_list = judge_arch_list(f.env.get("TORCH_CUDA_ARCH_LIST"), cap, "the gate's environment")
    if arch_list is not None:
        out.append(arch_list)
    return out


def _kernels(intent: str, kernels: dict[str, dict]) -> Finding:
    good = set(gate().nvfp4.good_targets)
    seen = {name: k for name, k in kernels.items() if k.get("targets")}
    evidence = tuple(f"{n} {k.get('version')}: {', '.join(k['targets'])}" for n, k in sorted(seen.items()))
    with_121a = sorted(n for n, k in seen.items() if good & set(k["targets"]))
    if with_121a:
        return _finding(
            status=Status.PASS,
            summary=f"NVFP4 is intended ({intent}) and {', '.join(with_121a)} kernels target sm_121a",
            subject="nvfp4",
            evidence=evidence,
        )
    found = "; ".join(evidence) if evidence else "no CUDA kernels found in " + ", ".join(sorted(kernels))
    return _finding(
        status=Status.WARN,
        summary=f"NVFP4 is intended ({intent}) but no kernel targets sm_121a ({found}): "
        "NVFP4 runs ~32% slower than FP8 on SM121 without it",
        subject="nvfp4",
        evidence=evidence,
        fix="stay on FP8, or use kernels built for sm_121a",
    )


RULES = (
    Rule(
        Stage.RESOLVED,
        resolved,
        "the fatbin headers of the shared objects in each GPU package's resolved wheel (read by range "
        "requests within a budget) against the profile's GPU, with the audit's judgement; what was not read "
        "is an INFO",
    ),
    Rule(
        Stage.INSTALLED,
        installed,
        "the fatbin headers of every shared object (.nv_fatbin, and the data sections large libraries "
        "embed fatbins in, where .nv_fatbin has no code for the GPU) against --gpu (GB10 by default): "
        "machine code that runs, PTX only (JIT), nothing that runs; Triton's bundled ptxas release",
    ),
    Rule(
        Stage.LIVE,
        live,
        "the GPU's compute capability, torch's arch list, every package's kernels for the live GPU (as "
        "the audit reads them), Triton's ptxas and TORCH_CUDA_ARCH_LIST as the workload sees them, NVFP4 "
        "intent and the SM targets of NVFP4-capable packages' kernels",
    ),
    Rule(
        Stage.ATTEST,
        Lazy("attest_g7", "kernels"),
        "the window's kernels: a private CUDA JIT cache that filled and the loaded libraries that "
        "have only PTX for the GPU; GPU operators that launched nothing on the GPU (ran on the CPU) "
        "with their share of the window; GPU time per backend family and library "
        "(data/kernel_paths.toml)",
    ),
)

"""G7 — GPU code that does not run on the target GPU (and NVFP4 on SM121): every stage's judgement.

installed: the GPU code (fatbin targets) of every shared object against the target GPU, judged per
package by sparkenv/cuda/coverage.py (which suffix runs where is data/kernels.toml); Triton's ptxas
(audit, and build's self-audit of its image);
live: the GPU's capability, torch's arch list, the same kernel coverage for the live GPU, Triton's
ptxas and TORCH_CUDA_ARCH_LIST as the workload will see them, NVFP4 intent (gate).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from sparkenv.cuda import coverage, toolchain
from sparkenv.gate.intent import nvfp4_intent
from sparkenv.knowledge import gate
from sparkenv.report import Finding, GotchaId, Status
from sparkenv.rules import Rule, Stage

if TYPE_CHECKING:
    from sparkenv.audit.scan import AuditFacts
    from sparkenv.gate.view import GateFacts


# ---------------------------------------------------------------------------------------------------
# Stage.INSTALLED: every distribution's kernels against the target GPU (--gpu, GB10 by default)


def installed(facts: AuditFacts) -> list[Finding]:
    cap = facts.gpu
    if cap is None:
        return [
            Finding(
                id=GotchaId.G7,
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
        finding = coverage.package_finding(key, d.dist.version, d.kernels, cap, gpu)
        if finding is not None:
            out.append(finding)
    out.append(_census(objects, len(out), deep, gpu))
    if facts.triton is not None:
        out.append(toolchain.judge_triton_ptxas(facts.triton, cap, live=False))
    return out


def _census(objects: int, carriers: int, deep: int, gpu: str) -> Finding:
    where = f"; {deep} with fatbins in data sections" if deep else ""
    summary = (
        f"read the GPU code of {objects} shared object{'s' if objects != 1 else ''} in {carriers} "
        f"distribution{'s' if carriers != 1 else ''} (fatbin headers{where}); target {gpu}"
        if objects
        else f"no installed distribution carries CUDA kernels; target {gpu}"
    )
    return Finding(
        id=GotchaId.G7,
        status=Status.INFO,
        summary=summary,
        subject="kernels",
        evidence=(f"rules: {coverage.kernels_source()}",),
    )


# ---------------------------------------------------------------------------------------------------
# Stage.LIVE


def live(f: GateFacts) -> list[Finding]:
    cap = f.capability
    if cap is None:
        return [
            Finding(
                id=GotchaId.G7,
                status=Status.SKIP,
                summary="no GPU capability known (no GPU, or torch/nvidia-smi missing)",
                subject="capability",
            )
        ]
    out = _live_coverage(f, cap)
    if not f.is_gb10:
        return [
            Finding(
                id=GotchaId.G7,
                status=Status.SKIP,
                summary=f"capability {cap} is not a GB10 (12, 1)",
                subject="capability",
            ),
            *out,
        ]
    arch = (f.device or {}).get("arch_list")
    if arch is None:
        out.append(
            Finding(
                id=GotchaId.G7,
                status=Status.PASS,
                summary=f"capability {cap}: a GB10 (torch arch list not read)",
                subject="capability",
            )
        )
    elif coverage.judge(arch, cap).status is Status.PASS:  # the same judgement as every package's
        out.append(
            Finding(
                id=GotchaId.G7,
                status=Status.PASS,
                summary=f"capability {cap}: GB10; torch arch list {', '.join(arch)} runs on "
                "SM121 (sm_120/compute_120)",
                subject="capability",
            )
        )
    elif coverage.judge(arch, cap).status is Status.WARN:
        out.append(
            Finding(
                id=GotchaId.G7,
                status=Status.WARN,
                summary=f"capability {cap}: GB10; torch arch list {', '.join(arch)}: "
                f"{coverage.judge(arch, cap).reason}",
                subject="capability",
                evidence=tuple(arch),
                fix="use a CUDA 13 torch (cu130 index or NGC) built with sm_120",
            )
        )
    else:
        out.append(
            Finding(
                id=GotchaId.G7,
                status=Status.FAIL,
                summary=f"capability {cap}: GB10, but torch was built for {', '.join(arch)}: "
                "no sm_120/compute_120 code to run on SM121",
                subject="capability",
                evidence=tuple(arch),
                fix="use a CUDA 13 torch (cu130 index or NGC) built with sm_120",
            )
        )
    intent = nvfp4_intent(f.workload, f.env)
    if intent and f.section("kernels"):
        out.append(_kernels(intent, f.section("kernels") or {}))
    elif intent:
        out.append(
            Finding(
                id=GotchaId.G7,
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
        )
    return out


def _live_coverage(f: GateFacts, cap: tuple[int, int]) -> list[Finding]:
    """Every package's kernels, Triton's ptxas and TORCH_CUDA_ARCH_LIST, for the live GPU."""
    from sparkenv.environment import kernels

    out: list[Finding] = []
    gpu = coverage.gpu_label(cap)
    facts = f.section("kernel_coverage")
    if facts is not None and facts.get("packages") is None:
        out.append(
            Finding(
                id=GotchaId.G7,
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
            finding = coverage.package_finding(key, str(pkg.get("version", "?")), objects, cap, gpu)
            if finding is not None:
                out.append(finding)
        triton = kernels.triton_from_json(facts.get("triton"))
        if triton is not None:
            out.append(toolchain.judge_triton_ptxas(triton, cap, live=True))
    elif f.probe_error("kernel_coverage"):
        out.append(
            Finding(
                id=GotchaId.G7,
                status=Status.ERROR,
                summary=f"kernel_coverage probe failed: {f.probe_error('kernel_coverage')}",
                subject="kernels",
            )
        )
    arch_list = toolchain.judge_arch_list(f.env.get("TORCH_CUDA_ARCH_LIST"), cap, "the gate's environment")
    if arch_list is not None:
        out.append(arch_list)
    return out


def _kernels(intent: str, kernels: dict[str, dict]) -> Finding:
    good = set(gate().nvfp4.good_targets)
    seen = {name: k for name, k in kernels.items() if k.get("targets")}
    evidence = tuple(f"{n} {k.get('version')}: {', '.join(k['targets'])}" for n, k in sorted(seen.items()))
    with_121a = sorted(n for n, k in seen.items() if good & set(k["targets"]))
    if with_121a:
        return Finding(
            id=GotchaId.G7,
            status=Status.PASS,
            summary=f"NVFP4 is intended ({intent}) and {', '.join(with_121a)} kernels target sm_121a",
            subject="nvfp4",
            evidence=evidence,
        )
    found = "; ".join(evidence) if evidence else "no CUDA kernels found in " + ", ".join(sorted(kernels))
    return Finding(
        id=GotchaId.G7,
        status=Status.WARN,
        summary=f"NVFP4 is intended ({intent}) but no kernel targets sm_121a ({found}): "
        "NVFP4 runs ~32% slower than FP8 on SM121 without it",
        subject="nvfp4",
        evidence=evidence,
        fix="stay on FP8, or use kernels built for sm_121a",
    )


RULES = (
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
)

"""G7 in the audit: every distribution's GPU code against the target GPU (--gpu, GB10 by default)."""

from __future__ import annotations

from sparkenv.audit.scan import AuditFacts
from sparkenv.cuda import coverage, toolchain
from sparkenv.report import Finding, Status


def check(facts: AuditFacts) -> list[Finding]:
    cap = facts.gpu
    if cap is None:
        return [Finding("G7", Status.SKIP, "kernel coverage not checked (--gpu none)", "kernels")]
    gpu = coverage.gpu_label(cap)
    out: list[Finding] = []
    objects = 0
    deep = 0
    for key, d in sorted(facts.dists.items()):
        if not d.kernels:
            continue
        objects += len(d.kernels)
        deep += sum(1 for o in d.kernels if set(o.sections) - {".nv_fatbin"})
        finding = coverage.package_finding(key, d.dist.version, d.kernels, cap, gpu)
        if finding is not None:
            out.append(finding)
    carriers = len(out)
    where = f"; {deep} with fatbins in data sections" if deep else ""
    summary = (
        f"read the GPU code of {objects} shared object{'s' if objects != 1 else ''} in {carriers} "
        f"distribution{'s' if carriers != 1 else ''} (fatbin headers{where}); target {gpu}"
        if objects
        else f"no installed distribution carries CUDA kernels; target {gpu}"
    )
    out.append(Finding("G7", Status.INFO, summary, "kernels", (f"rules: {coverage.kernels_source()}",)))
    if facts.triton is not None:
        out.append(toolchain.judge_triton_ptxas(facts.triton, cap, live=False))
    return out

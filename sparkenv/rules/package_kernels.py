"""G7: one finding for a package's GPU code against the GPU it must run on, for the audit (and the
image's self-audit) and the gate alike (rules/g7.py). The per-target judgement, `coverage.judge`, and the
tables it reads stay in sparkenv/cuda/coverage.py."""

from __future__ import annotations

from collections.abc import Iterable

from sparkenv.cuda.coverage import Capability, ObjectKernels, cap_text, judge
from sparkenv.report import Finding, GotchaId, Status


def package_finding(
    key: str, version: str, objects: Iterable[ObjectKernels], cap: Capability, gpu: str
) -> Finding | None:
    """One G7 finding for a package, judged on the union of its objects' targets (a package's kernels
    are spread over its objects: libcufftw.so.12 carries one sm_75 helper cubin while libcufft.so.12
    holds cuFFT's kernels for every GPU). None when none of its objects carries GPU code."""
    objects = [o for o in objects if o.targets or not o.complete]
    if not objects:
        return None
    targets = sorted({t for o in objects for t in o.targets})
    payload: dict[str, int] = {}
    for o in objects:
        for name, n in (o.payload or {}).items():
            payload[name] = payload.get(name, 0) + n
    sized = all(o.payload is not None for o in objects)
    complete = all(o.complete for o in objects)
    got = judge(targets, cap, complete, payload if sized else None)
    evidence = tuple(
        f"{o.path}: {', '.join(o.targets) or 'nothing read'}"
        + (f" [in {', '.join(o.sections)}]" if o.sections and tuple(o.sections) != (".nv_fatbin",) else "")
        + (f" ({o.problem})" if o.problem else "")
        for o in sorted(objects, key=lambda o: o.path)
    )
    name = f"{key} {version}"
    n = len(objects)
    where = f"{n} object{'s' if n != 1 else ''} with kernels"
    if got.status is Status.PASS:
        return Finding(
            id=GotchaId.G7,
            status=Status.PASS,
            summary=f"{name}: {where}; runs on {gpu} ({got.reason})",
            subject=key,
            evidence=evidence,
        )
    shown = ", ".join(o.path for o in objects[:3]) + (f" and {n - 3} more" if n > 3 else "")
    if got.status is Status.FAIL:
        return Finding(
            id=GotchaId.G7,
            status=Status.FAIL,
            summary=f"{name} ({shown}) cannot run on {gpu}: {got.reason} — fails with 'no kernel image is "
            f"available for execution on the device'",
            subject=key,
            evidence=evidence,
            fix=f"install a build of {key} with kernels for {cap_text(cap)} (sm_{cap[0]}{cap[1]}, or "
            f"sm_{cap[0]}0/sm_{cap[0]}0f which run on the whole {cap[0]}.x family; not an 'a' build for "
            f"another capability), e.g. the CUDA 13 wheel or the NGC image's build; or rebuild it with "
            f'TORCH_CUDA_ARCH_LIST="{cap_text(cap)}"',
        )
    if got.status is Status.WARN:
        return Finding(
            id=GotchaId.G7,
            status=Status.WARN,
            summary=f"{name} ({shown}): {got.reason}",
            subject=key,
            evidence=evidence,
            fix=f"prefer a build of {key} with sm_{cap[0]}{cap[1]} (or sm_{cap[0]}0) cubins, or run it once "
            "while building the image so the JIT cache ships warm",
        )
    problems = "; ".join(f"{o.path}: {o.problem}" for o in objects if o.problem)
    return Finding(
        id=GotchaId.G7,
        status=Status.INFO,
        summary=f"{name} ({shown}): {got.reason}" + (f" — {problems}" if problems else ""),
        subject=key,
        evidence=evidence,
    )

"""G7: will the toolchain compile for the GPU — the ptxas Triton runs, and the TORCH_CUDA_ARCH_LIST
extensions are built under. One judgement for the audit and the gate (rules/g7.py), over the releases
and values sparkenv/cuda/toolchain.py reads."""

from __future__ import annotations

from typing import TYPE_CHECKING

from sparkenv import datafiles
from sparkenv.cuda import coverage
from sparkenv.cuda.toolchain import min_ptxas, parse_arch_list, release_tuple
from sparkenv.report import Finding, GotchaId, Status

if TYPE_CHECKING:
    from sparkenv.cuda.toolchain import TritonTools


def judge_triton_ptxas(tools: TritonTools, cap: coverage.Capability, live: bool) -> Finding:
    """G7: the ptxas Triton will run for this GPU accepts its arch-specific target. `live` (the gate):
    the environment is the workload's, so a ptxas that rejects the target is a FAIL; in the audit the
    variables may still be set at run time, so it is a WARN."""
    spec = datafiles.load("toolchain")["triton"]
    blackwell = cap[0] >= int(spec["blackwell_from_major"]) and spec["blackwell_tool"] in tools.bundled
    tool, var = (
        (spec["blackwell_tool"], spec["blackwell_env"])
        if blackwell
        else (spec["default_tool"], spec["default_env"])
    )
    other = spec["default_env"] if blackwell else spec["blackwell_env"]
    need = min_ptxas(cap)
    arch = f"sm_{cap[0]}{cap[1]}a"
    subject = "triton-ptxas"
    name = f"{tools.name} {tools.version}"
    path = tools.env.get(var)
    if path:
        release = tools.env_release.get(path)
        source = f"{var}={path}"
        if release is None:
            return Finding(
                id=GotchaId.G7,
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
            return Finding(
                id=GotchaId.G7,
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
        return Finding(
            id=GotchaId.G7,
            status=Status.INFO,
            summary=f"{name} compiles with {source} (CUDA {release or 'release not read'}); no known minimum "
            f"for {arch}{note}",
            subject=subject,
            evidence=evidence,
        )
    if release_tuple(release) >= release_tuple(need):
        return Finding(
            id=GotchaId.G7,
            status=Status.PASS,
            summary=f"{name} compiles with {source} (CUDA {release}), which accepts {arch} "
            f"(needs CUDA >= {need}){note}",
            subject=subject,
            evidence=evidence,
        )
    return Finding(
        id=GotchaId.G7,
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
    targets = parse_arch_list(value)
    if targets is None or not targets:
        return Finding(
            id=GotchaId.G7,
            status=Status.WARN,
            summary=f'TORCH_CUDA_ARCH_LIST="{value}" ({where}) is not a list of capabilities like "12.0 '
            '12.1+PTX"',
            subject=subject,
            evidence=(value,),
            fix=f'set TORCH_CUDA_ARCH_LIST="{coverage.cap_text(cap)}"',
        )
    got = coverage.judge(targets, cap)
    gpu = coverage.gpu_label(cap)
    if got.status is Status.PASS:
        return Finding(
            id=GotchaId.G7,
            status=Status.PASS,
            summary=f'TORCH_CUDA_ARCH_LIST="{value}" ({where}) builds extensions that run on {gpu} '
            f"({got.reason})",
            subject=subject,
        )
    status = Status.WARN if got.status in (Status.WARN, Status.INFO) else Status.FAIL
    return Finding(
        id=GotchaId.G7,
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

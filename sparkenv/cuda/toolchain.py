"""Toolchains that compile GPU code after install: Triton's ptxas and TORCH_CUDA_ARCH_LIST (G7).

Pure judgements over facts the stages gather (a ptxas release read from its file or its --version,
the environment's variables); data in data/toolchain.toml. The audit and the gate call the same
functions.
"""

from __future__ import annotations

import mmap
import os
import re
from collections.abc import Mapping
from dataclasses import dataclass

from sparkenv.cuda import coverage
from sparkenv.knowledge import toolchain
from sparkenv.report import Finding, GotchaId, Status

_PREFIX = b"Cuda compilation tools, release "
_RELEASE = re.compile(re.escape(_PREFIX) + rb"(\d+)\.(\d+)")
_ARCH = re.compile(r"^(\d{1,2})\.(\d)([af]?)(\+PTX)?$", re.IGNORECASE)
_MAX_TOOL_BYTES = 256 << 20


def ptxas_release_of_text(text: str | bytes) -> str | None:
    """'Cuda compilation tools, release 12.8, V12.8.93' (ptxas --version, or inside the binary) -> '12.8'."""
    data = text.encode() if isinstance(text, str) else text
    m = _RELEASE.search(data)
    return f"{int(m.group(1))}.{int(m.group(2))}" if m else None


def ptxas_release_of_file(path: str) -> str | None:
    """The release a ptxas binary was built from, found in its bytes: nothing is executed (the audit
    reads environments from outside). None when unreadable or not a ptxas."""
    try:
        with open(path, "rb") as fh:
            size = os.fstat(fh.fileno()).st_size
            if not size or size > _MAX_TOOL_BYTES:
                return None
            with mmap.mmap(fh.fileno(), 0, access=mmap.ACCESS_READ) as mm:
                # The literal prefix by mmap.find (a third of a regex search's time over the 30-40 MB
                # of a ptxas: the gate reads two at every start), the release matched where it stands.
                at = mm.find(_PREFIX)
                while at >= 0:
                    m = _RELEASE.match(mm, at)
                    if m:
                        return f"{int(m.group(1))}.{int(m.group(2))}"
                    at = mm.find(_PREFIX, at + 1)
                return None
    except (OSError, ValueError):
        return None


def _rel(text: str) -> tuple[int, int]:
    major, _, minor = text.partition(".")
    return int(major), int(minor or 0)


def min_ptxas(cap: coverage.Capability) -> str | None:
    return toolchain().ptxas.min_release.get(coverage.cap_text(cap))


@dataclass(frozen=True)
class TritonTools:
    """What a Triton install ships and what the environment points it at."""

    name: str  # triton, pytorch-triton
    version: str
    bundled: Mapping[str, str | None]  # tool name (ptxas, ptxas-blackwell) -> release read from it
    env: Mapping[str, str]  # TRITON_PTXAS_PATH / TRITON_PTXAS_BLACKWELL_PATH as set
    env_release: Mapping[str, str | None]  # path -> release read from it (None: unreadable/missing)


def judge_triton_ptxas(tools: TritonTools, cap: coverage.Capability, live: bool) -> Finding:
    """G7: the ptxas Triton will run for this GPU accepts its arch-specific target. `live` (the gate):
    the environment is the workload's, so a ptxas that rejects the target is a FAIL; in the audit the
    variables may still be set at run time, so it is a WARN."""
    spec = toolchain().triton
    blackwell = cap[0] >= spec.blackwell_from_major and spec.blackwell_tool in tools.bundled
    tool, var = (
        (spec.blackwell_tool, spec.blackwell_env) if blackwell else (spec.default_tool, spec.default_env)
    )
    other = spec.default_env if blackwell else spec.blackwell_env
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
    if _rel(release) >= _rel(need):
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


def parse_arch_list(value: str) -> list[str] | None:
    """TORCH_CUDA_ARCH_LIST ('8.0 8.6 9.0 12.0+PTX', '9.0a;12.1', '12.1') -> target names
    (sm_80 … sm_120, compute_120); None when a part is not an arch."""
    out: list[str] = []
    for part in re.split(r"[\s;,]+", value.strip()):
        if not part:
            continue
        m = _ARCH.match(part)
        if not m:
            return None
        digits = f"{m.group(1)}{m.group(2)}"
        out.append(f"sm_{digits}{m.group(3).lower()}")
        if m.group(4):
            out.append(f"compute_{digits}{m.group(3).lower()}")
    return out


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

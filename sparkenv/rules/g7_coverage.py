"""G7's verdict on the GPU code one object (or a set of targets) carries for a GPU: machine code that
runs (PASS), only PTX or LTO-IR that must be compiled first (WARN, INFO when small), nothing that runs
(FAIL), or cannot tell (INFO). The one table every G7 judgement uses (installed packages, Triton's
ptxas, TORCH_CUDA_ARCH_LIST, the gate); what a target is and where it runs is sparkenv/cuda/coverage.py."""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass

from sparkenv.core.report import Status
from sparkenv.cuda.coverage import Capability, KernelTarget, cap_text, parse_target, runs_on
from sparkenv.knowledge import kernels


@dataclass(frozen=True)
class Coverage:
    status: Status  # PASS (machine code runs), WARN (only PTX / LTO-IR fits), FAIL, INFO (cannot tell)
    native: tuple[str, ...]  # cubins that run on the GPU
    jit: tuple[str, ...]  # PTX the driver would JIT-compile for it
    lto: tuple[str, ...]  # LTO-IR nvJitLink could link for it
    targets: tuple[str, ...]  # everything read
    reason: str  # one phrase: why this status


def judge(
    targets: Iterable[KernelTarget | str],
    cap: Capability,
    complete: bool = True,
    payload: Mapping[str, int] | None = None,
) -> Coverage:
    """Coverage of one object (or a set of targets) on `cap`. `complete=False`: the reader stopped early
    or a section was damaged, so a missing target is not proof; the verdict is then at worst INFO.
    `payload`: bytes per target name (from the entry headers): PTX too small to cost a noticeable JIT is
    INFO, not WARN (data/kernels.toml cost.ptx_warn_bytes)."""
    parsed = sorted({t for t in (parse_target(x) for x in targets) if t is not None})
    names = tuple(t.name for t in parsed)
    fits = [t for t in parsed if runs_on(t, cap)]
    native = tuple(t.name for t in fits if t.kind == "sm")
    jit = tuple(t.name for t in fits if t.kind == "compute")
    lto = tuple(t.name for t in fits if t.kind == "lto")
    if native or jit or lto:
        status, reason = _what_fits(native, jit, lto, cap_text(cap), payload)
        return Coverage(status, native, jit, lto, names, reason)
    if not parsed:
        return Coverage(Status.INFO, (), (), (), (), "no CUDA kernels read")
    return _nothing_fits(parsed, names, cap, complete)


def _what_fits(
    native: tuple[str, ...],
    jit: tuple[str, ...],
    lto: tuple[str, ...],
    want: str,
    payload: Mapping[str, int] | None,
) -> tuple[Status, str]:
    """Machine code runs (PASS); else PTX or LTO-IR must be compiled first: WARN, or INFO for PTX small
    enough to JIT in well under a second."""
    if native:
        return Status.PASS, f"{', '.join(native)} runs on {want}"
    cost = kernels().cost
    if not jit:
        return Status.WARN, f"only LTO-IR fits {want} ({', '.join(lto)}): {cost.lto}"
    size = sum((payload or {}).get(j, 0) for j in jit) if payload is not None else None
    if size is not None and size < cost.ptx_warn_bytes:
        return Status.INFO, (
            f"only PTX fits {want} ({', '.join(jit)}, {size / 1024:.0f} KiB): JIT-compiled at first use, "
            "small enough to take well under a second"
        )
    return Status.WARN, f"only PTX fits {want} ({', '.join(jit)}): {cost.ptx}"


def _nothing_fits(
    parsed: list[KernelTarget], names: tuple[str, ...], cap: Capability, complete: bool
) -> Coverage:
    """No code that runs: FAIL, or INFO when the reader could not read everything."""
    want, why = cap_text(cap), _why_not(parsed, cap)
    if not complete:
        return Coverage(
            Status.INFO, (), (), (), names, f"no code for {want} among what could be read ({why}); incomplete"
        )
    return Coverage(Status.FAIL, (), (), (), names, f"no code that runs on {want} ({why})")


def _why_not(parsed: list[KernelTarget], cap: Capability) -> str:
    arch_specific = [t.name for t in parsed if t.variant == "a" and t.arch // 10 == cap[0]]
    text = "has " + ", ".join(t.name for t in parsed)
    if arch_specific:
        text += f"; {', '.join(arch_specific)} is arch-specific: it runs only on exactly that capability"
    higher = [t.name for t in parsed if t.arch // 10 == cap[0] and t.arch % 10 > cap[1]]
    if higher:
        text += f"; {', '.join(higher)} needs a newer GPU of this family"
    return text

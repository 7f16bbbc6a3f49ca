"""Kernel coverage (G7): does the GPU code a package carries run on a GPU of a given capability?

One judgement for every stage: the audit and the build feed it the targets read from fatbin headers,
the gate the same plus torch's `get_arch_list()`. Which suffix runs where is data
(data/kernels.toml `runs_on`), not code. Pure: no file access here.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass

from sparkenv.cuda.fatbin import KernelTarget
from sparkenv.knowledge import gate, kernels
from sparkenv.report import Status

Capability = tuple[int, int]
_TARGET = re.compile(r"^(sm|compute|lto)_(\d{2,3})([af]?)$")
_CAP = re.compile(r"^\(?\s*(\d{1,2})\s*[.,]\s*(\d)\s*\)?$")


def parse_capability(text: str) -> Capability | None:
    """'12.1', '(12, 1)', '121', 'sm_121' -> (12, 1); None when it is not a capability."""
    text = text.strip().lower().removeprefix("sm_").removeprefix("compute_").rstrip("af")
    m = _CAP.match(text)
    if m:
        return int(m.group(1)), int(m.group(2))
    if text.isdigit() and len(text) in (2, 3):
        return int(text[:-1]), int(text[-1])
    return None


def cap_text(cap: Capability) -> str:
    return f"{cap[0]}.{cap[1]}"


def parse_target(name: str | KernelTarget) -> KernelTarget | None:
    """'sm_120a' / 'compute_90' / 'lto_90' (fatbin names, torch's arch list) -> KernelTarget."""
    if isinstance(name, KernelTarget):
        return name
    m = _TARGET.match(name.strip())
    return KernelTarget(m.group(1), int(m.group(2)), m.group(3)) if m else None


def runs_on(target: KernelTarget, cap: Capability) -> bool:
    """Whether code built for `target` can execute on a GPU of capability `cap` (data/kernels.toml)."""
    rule = kernels().runs_on.get(target.kind, {}).get(target.variant)
    built = (target.arch // 10, target.arch % 10)
    if rule == "exact":
        return built == cap
    if rule == "same-major":
        return built[0] == cap[0] and cap[1] >= built[1]
    if rule == "at-least":
        return cap >= built
    return False


def kernels_source() -> str:
    return kernels().source


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
    want = cap_text(cap)
    if native:
        return Coverage(Status.PASS, native, jit, lto, names, f"{', '.join(native)} runs on {want}")
    cost = kernels().cost
    if jit:
        size = sum((payload or {}).get(j, 0) for j in jit) if payload is not None else None
        if size is not None and size < cost.ptx_warn_bytes:
            return Coverage(
                Status.INFO,
                native,
                jit,
                lto,
                names,
                f"only PTX fits {want} ({', '.join(jit)}, {size / 1024:.0f} KiB): JIT-compiled at first use, "
                "small enough to take well under a second",
            )
        return Coverage(
            Status.WARN, native, jit, lto, names, f"only PTX fits {want} ({', '.join(jit)}): {cost.ptx}"
        )
    if lto:
        return Coverage(
            Status.WARN, native, jit, lto, names, f"only LTO-IR fits {want} ({', '.join(lto)}): {cost.lto}"
        )
    if not parsed:
        return Coverage(Status.INFO, (), (), (), (), "no CUDA kernels read")
    why = _why_not(parsed, cap)
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


@dataclass(frozen=True)
class ObjectKernels:
    """The fatbin facts of one shared object, as a stage gathered them."""

    path: str  # as shown to the user (relative to site-packages)
    targets: tuple[str, ...]
    complete: bool = True
    problem: str | None = None
    sections: tuple[str, ...] = ()
    payload: Mapping[str, int] | None = None  # bytes per target name


def gb10() -> Capability:
    return gate().gb10.capability


def gpu_label(cap: Capability) -> str:
    """'GB10 (12.1)' for the Spark, 'capability 9.0' for any other GPU."""
    return f"GB10 ({cap_text(cap)})" if cap == gb10() else f"capability {cap_text(cap)}"

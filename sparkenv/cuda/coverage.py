"""Kernel coverage (G7): does the GPU code a package carries run on a GPU of a given capability?

One judgement for every stage: the audit and the build feed it the targets read from fatbin headers,
the gate the same plus torch's `get_arch_list()`. Which suffix runs where is data
(data/kernels.toml `runs_on`), not code. Pure: no file access here.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass

from sparkenv.core.errors import SparkenvError
from sparkenv.cuda.targets import KernelTarget
from sparkenv.knowledge import gate, kernels

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


def parse_gpu_option(value: str | None) -> Capability | None:
    """`--gpu`'s value (audit, build): a capability such as 12.1 or 9.0, the GB10's when not given, or
    None for `none` (the kernel check skipped); anything else is a usage error naming the option (exit 2)."""

    if value is None:
        return gb10()
    if value.strip().lower() == "none":
        return None
    cap = parse_capability(value)
    if cap is None:
        raise SparkenvError(f"--gpu {value!r}: not a GPU capability (like 12.1 or 9.0) or 'none'")
    return cap


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


def native(targets: Iterable[KernelTarget | str], cap: Capability) -> tuple[str, ...]:
    """The machine code (cubins) among `targets` that runs on `cap`, by name: a fact, not a verdict
    (rules/g7_coverage.py judges coverage; the reader asks this to know whether to read deeper)."""
    parsed = sorted({t for t in (parse_target(x) for x in targets) if t is not None})
    return tuple(t.name for t in parsed if t.kind == "sm" and runs_on(t, cap))


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

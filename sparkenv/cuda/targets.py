"""One GPU target a kernel image was built for (sm_121a, compute_90, lto_90): the value fatbin.py reads
and coverage.py judges. Its own module so that the judgement (the gate's checks) does not import the
ELF and fatbin readers, which only the forked reading of the workload's packages needs."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True, order=True)
class KernelTarget:
    kind: str  # "sm" (a cubin: machine code), "compute" (PTX, compiled by the driver at load), "lto"
    arch: int  # 90, 120, 121 …
    variant: str  # "", "a" (arch-specific) or "f" (family)

    @property
    def name(self) -> str:
        return f"{self.kind}_{self.arch}{self.variant}"

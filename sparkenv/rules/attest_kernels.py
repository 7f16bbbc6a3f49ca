"""From kernel names to backend families and attention backends (data/kernel_paths.toml): the one
classifier `sparkenv attest` and `gate --attest` use for G2 and G7. A kernel is attributed to a family by
its name, and through the family to a library: sparkenv's fatbin reader reads GPU targets, not symbol
tables, so a kernel is not traced to the shared object that defines it."""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from typing import TYPE_CHECKING

from sparkenv.knowledge import kernel_paths

if TYPE_CHECKING:
    from sparkenv.facts.attest import KernelRow
    from sparkenv.knowledge.records.kernel_paths import Attention, Family

OTHER = "other"  # a kernel no family's pattern names
OTHER_LIBRARY = "unattributed"


def family(name: str) -> Family | None:
    """The first family whose pattern the kernel's name matches, or None."""
    for f in kernel_paths().family:
        if f.pattern.search(name):
            return f
    return None


def attention(row: KernelRow) -> Attention | None:
    """The attention backend a kernel served: by the operators it was launched under, else by its family
    (a flash-attn kernel launched outside any operator torch records)."""
    data = kernel_paths()
    if row.under:
        for a in data.attention:
            if a.operator.search(row.under):
                return a
    fam = family(row.name)
    if fam is not None and fam.backend:
        return next((a for a in data.attention if a.name == fam.backend), None)
    return None


@dataclass(frozen=True)
class Share:
    """One family's (or backend's) part of the window's GPU time."""

    name: str
    library: str
    kernels: int  # distinct kernel names
    launches: int
    gpu_ns: int

    def of(self, total: int) -> float:
        return self.gpu_ns / total if total else 0.0


def families(rows: Iterable[KernelRow]) -> list[Share]:
    """GPU time per family, largest first; every kernel counted once (OTHER for the unnamed)."""
    acc: dict[str, list] = {}
    for r in rows:
        fam = family(r.name)
        key, lib = (fam.name, fam.library) if fam else (OTHER, OTHER_LIBRARY)
        got = acc.setdefault(key, [lib, set(), 0, 0])
        got[1].add(r.name)
        got[2] += r.count
        got[3] += r.gpu_ns
    shares = [Share(k, v[0], len(v[1]), v[2], v[3]) for k, v in acc.items()]
    return sorted(shares, key=lambda s: (-s.gpu_ns, s.name))


def libraries(shares: Iterable[Share]) -> list[Share]:
    """The same time per library (several families can share one: cuDNN attention and cuDNN)."""
    acc: dict[str, list[int]] = {}
    for s in shares:
        got = acc.setdefault(s.library, [0, 0, 0])
        got[0] += s.kernels
        got[1] += s.launches
        got[2] += s.gpu_ns
    out = [Share(lib, lib, v[0], v[1], v[2]) for lib, v in acc.items()]
    return sorted(out, key=lambda s: (-s.gpu_ns, s.name))


def backends(rows: Iterable[KernelRow]) -> list[tuple[Attention, int, int]]:
    """(attention backend, launches, GPU ns) for each backend that ran, largest first."""
    acc: dict[str, list] = {}
    for r in rows:
        a = attention(r)
        if a is not None:
            got = acc.setdefault(a.name, [a, 0, 0])
            got[1] += r.count
            got[2] += r.gpu_ns
    return sorted(((a, n, ns) for a, n, ns in acc.values()), key=lambda t: (-t[2], t[0].name))


def percent(part: int | float, total: int | float) -> str:
    return f"{100.0 * part / total:.1f} %" if total else "0 %"


def ms(ns: int | float) -> str:
    return f"{ns / 1e6:,.1f} ms"

"""From kernel names to backend families, libraries and attention backends (data/kernel_paths.toml): the one
classifier `sparkenv attest` and `gate --attest` use for G2 and G7. A kernel's library is the loaded shared
object whose GPU code defines it (the facts' `defined_in`, read from the cubins' symbol tables), else the
library its family's name pattern says; its family is the first whose name pattern matches, else the one
whose library files define it."""

from __future__ import annotations

import os
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING

from sparkenv.knowledge import kernel_paths

if TYPE_CHECKING:
    from sparkenv.facts.attest import KernelRow
    from sparkenv.knowledge.records.kernel_paths import Attention, Family, Path

OTHER = "other"  # a kernel no family's pattern names
OTHER_LIBRARY = "unattributed"
BY_SYMBOLS, BY_PATTERN, UNATTRIBUTED = "symbol table", "name pattern", "unattributed"

Defined = Mapping[str, tuple[str, ...]]  # kernel name -> the shared objects that define it


def family(name: str, where: Iterable[str] = ()) -> Family | None:
    """The first family whose pattern the kernel's name matches; else the first whose library files
    (`files`) define it (`where`: the defining shared objects); or None."""
    fams = kernel_paths().family
    for f in fams:
        if f.pattern.search(name):
            return f
    bases = [os.path.basename(p) for p in where]
    for f in fams:
        if f.files is not None and any(f.files.search(b) for b in bases):
            return f
    return None


def library(name: str, defined: Defined | None = None) -> tuple[str, str]:
    """(library, how): the shared objects whose GPU code defines the kernel (by symbol table), else the
    library its family names (by name pattern), else unattributed."""
    where = (defined or {}).get(name, ())
    if where:
        return ", ".join(sorted({os.path.basename(p) for p in where})), BY_SYMBOLS
    fam = family(name)
    if fam is not None:
        return fam.library, BY_PATTERN
    return OTHER_LIBRARY, UNATTRIBUTED


def attention(row: KernelRow, defined: Defined | None = None) -> Attention | None:
    """The attention backend a kernel served: by the operators it was launched under, else by its family
    (a flash-attn kernel launched outside any operator torch records)."""
    data = kernel_paths()
    if row.under:
        for a in data.attention:
            if a.operator.search(row.under):
                return a
    fam = family(row.name, (defined or {}).get(row.name, ()))
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
    how: str = ""  # for a library: how its kernels were attributed (BY_SYMBOLS, BY_PATTERN, UNATTRIBUTED)

    def of(self, total: int) -> float:
        return self.gpu_ns / total if total else 0.0


def families(rows: Iterable[KernelRow], defined: Defined | None = None) -> list[Share]:
    """GPU time per family, largest first; every kernel counted once (OTHER for the unnamed)."""
    acc: dict[str, list] = {}
    for r in rows:
        fam = family(r.name, (defined or {}).get(r.name, ()))
        key, lib = (fam.name, fam.library) if fam else (OTHER, OTHER_LIBRARY)
        got = acc.setdefault(key, [lib, set(), 0, 0])
        got[1].add(r.name)
        got[2] += r.count
        got[3] += r.gpu_ns
    shares = [Share(k, v[0], len(v[1]), v[2], v[3]) for k, v in acc.items()]
    return sorted(shares, key=lambda s: (-s.gpu_ns, s.name))


def libraries(rows: Iterable[KernelRow], defined: Defined | None = None) -> list[Share]:
    """GPU time per library (library(): by symbol table, else by name pattern), largest first."""
    acc: dict[tuple[str, str], list] = {}
    for r in rows:
        lib, how = library(r.name, defined)
        got = acc.setdefault((lib, how), [set(), 0, 0])
        got[0].add(r.name)
        got[1] += r.count
        got[2] += r.gpu_ns
    out = [Share(lib, lib, len(v[0]), v[1], v[2], how) for (lib, how), v in acc.items()]
    return sorted(out, key=lambda s: (-s.gpu_ns, s.name))


def backends(rows: Iterable[KernelRow], defined: Defined | None = None) -> list[tuple[Attention, int, int]]:
    """(attention backend, launches, GPU ns) for each backend that ran, largest first."""
    acc: dict[str, list] = {}
    for r in rows:
        a = attention(r, defined)
        if a is not None:
            got = acc.setdefault(a.name, [a, 0, 0])
            got[1] += r.count
            got[2] += r.gpu_ns
    return sorted(((a, n, ns) for a, n, ns in acc.values()), key=lambda t: (-t[2], t[0].name))


def percent(part: int | float, total: int | float) -> str:
    return f"{100.0 * part / total:.1f} %" if total else "0 %"


def ms(ns: int | float) -> str:
    return f"{ns / 1e6:,.1f} ms"


@dataclass(frozen=True)
class Slower:
    """One op's fallback path as the window ran it (data/kernel_paths.toml [[fallback.path]])."""

    path: Path
    gpu_ns: int
    share: float  # of the window's GPU time
    hot: bool  # share >= [fallback] hot_share
    capability: tuple[int, int] | None
    faster_here: bool  # the data says a faster family is built for this capability
    kernels: tuple[str, ...]  # the slow family's kernels, by GPU time


def served_by(row: KernelRow, defined: Defined | None = None) -> set[str]:
    """The names a kernel answers to in [[fallback.path]]: its family, and the attention backend it served."""
    fam = family(row.name, (defined or {}).get(row.name, ()))
    a = attention(row, defined)
    return {n for n in (fam.name if fam else None, a.name if a else None) if n}


def slower_paths(
    rows: Iterable[KernelRow], capability: tuple[int, int] | None, gotcha: str, defined: Defined | None = None
) -> list[Slower]:
    """Each fallback path `gotcha` judges that the window ran (its slow families' GPU time, largest first)."""
    data = kernel_paths().fallback
    rows = list(rows)
    total = sum(r.gpu_ns for r in rows)
    cap = f"{capability[0]}.{capability[1]}" if capability else None
    out = []
    for p in data.path:
        if p.gotcha != gotcha:
            continue
        hit = sorted((r for r in rows if served_by(r, defined) & set(p.slow)), key=lambda r: -r.gpu_ns)
        ns = sum(r.gpu_ns for r in hit)
        if not ns:
            continue
        share = ns / total if total else 0.0
        names = tuple(dict.fromkeys(r.name for r in hit))
        out.append(Slower(p, ns, share, share >= data.hot_share, capability, cap in p.capabilities, names))
    return sorted(out, key=lambda s: -s.gpu_ns)


def capability(records: Iterable[object]) -> tuple[int, int] | None:
    """The GPU the window ran on (the first record that says), for the fallback paths' judgement."""
    return next((c for r in records if (c := getattr(r, "capability", None))), None)

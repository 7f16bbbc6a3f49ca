"""Which CUDA major a soname, a distribution name, a version label or a requirement points to.

All knowledge comes from sparkenv/data/cuda.toml; this module only compiles and applies it.
"""

from __future__ import annotations

import functools
import re
from dataclasses import dataclass

from sparkenv.knowledge import cuda

_VENDOR_HASH = re.compile(r"^(lib[\w+]+?)[.-][0-9a-f]{8}(\.so(?:\.[\w.]*)?)$")
_CUDA_LABEL = re.compile(r"\+(?:.*[.+])?cu(\d{2,3})(?!\d)")
_CPU_LABEL = re.compile(r"\+(?:.*\.)?cpu(?:\.|$)")
# .nv26.08 as torch prints it; .nv26.8 as its installed distribution's METADATA (PEP 440 drops the 0)
_NGC_LABEL = re.compile(r"\+.*?\bnv(\d\d)\.(\d\d?)(?!\d)")
_INDEX_LABEL = re.compile(r"/(cu\d{2,3}|cpu)(?:/|$)")  # PyTorch's channels: /whl/cu128, /whl/cpu
_NAME_PREFIX = re.compile(r"^\s*([A-Za-z0-9][A-Za-z0-9._-]*)")


@dataclass(frozen=True)
class NameMatch:
    major: int
    library: bool


def target_major() -> int:
    return cuda().target_major


def reviewed() -> str:
    return cuda().reviewed


@functools.cache
def _soname_rules() -> tuple[tuple[re.Pattern[str], dict[str, int]], ...]:
    rules = []
    for entry in cuda().sonames:
        prefix = entry.pattern.removesuffix(".so.N")
        body = re.escape(prefix).replace(r"\*", r"[A-Za-z0-9_]*")
        rules.append((re.compile(rf"^{body}\.so\.(\d+)(?:\.\d+)*$"), dict(entry.majors)))
    return tuple(rules)


def unvendored(soname: str) -> str:
    """libcudart.faf08d9a.so.13 (auditwheel's vendored copy) -> libcudart.so.13."""
    m = _VENDOR_HASH.match(soname)
    return m.group(1) + m.group(2) if m else soname


def soname_major(soname: str) -> int | None:
    """The CUDA major a soname proves, or None when it proves nothing (ambiguous or not CUDA)."""
    name = unvendored(soname)
    for regex, majors in _soname_rules():
        m = regex.match(name)
        if m:
            return majors.get(m.group(1))
    return None


@functools.cache
def name_match(key: str) -> NameMatch | None:
    """CUDA major carried by a normalized distribution name (nvidia-cublas-cu12 -> 12)."""
    for rule in cuda().names:
        m = rule.regex.match(key)
        if m:
            major_group = next(g for g in m.groups() if g and g.isdigit())
            return NameMatch(int(major_group), rule.library)
    return None


@functools.cache
def extra_major(extra: str) -> int | None:
    """The CUDA major an extra asks for (jax[cuda12], …[cu12], transformer-engine[core_cu12] -> 12)."""
    m = cuda().extra_regex.match(extra.strip().lower())
    return int(m.group(1)) if m else None


@functools.cache
def versioned_names() -> frozenset[str]:
    return frozenset(cuda().versioned_names)


def is_cuda_relevant(key: str) -> bool:
    return key in versioned_names() or name_match(key) is not None


def label_cuda_major(version: str) -> int | None:
    """+cu128 -> 12, +cu130 -> 13, +cu12torch2.9… -> 12 (flash-attn's GitHub wheels)."""
    m = _CUDA_LABEL.search(version)
    if not m:
        return None
    return cuda_digits_major(m.group(1))


def cuda_digits_major(digits: str) -> int:
    """The major of CUDA's version digits as labels and library names write them: 128 -> 12, 130 -> 13,
    12 -> 12 (flash-attn's +cu12 and bitsandbytes' libbitsandbytes_cuda130 use the same digits)."""
    return int(digits) if len(digits) == 2 and digits[0] == "1" else int(digits[:-1])


def index_label(url: str) -> str | None:
    """The local label an index URL serves builds of: .../whl/cu128 -> "+cu128", .../whl/cpu -> "+cpu"."""
    m = _INDEX_LABEL.search(url)
    return f"+{m.group(1)}" if m else None


def is_cpu_label(version: str) -> bool:
    return bool(_CPU_LABEL.search(version))


def ngc_release(version: str) -> str | None:
    """2.9.0a0+145a3a7bda.nv25.10 -> '25.10'; 2.14.0a0+4fdf77b940.nv26.8.63802676 -> '26.08'."""
    m = _NGC_LABEL.search(version)
    return f"{m.group(1)}.{int(m.group(2)):02d}" if m else None


def ngc_cuda_major(release: str) -> int | None:
    return cuda().ngc.get(release)


def first_ngc_release(major: int) -> str | None:
    """The earliest NGC PyTorch release (YY.MM) on CUDA `major`, from data/cuda.toml's [ngc] table."""
    found = [r for r, m in cuda().ngc.items() if m == major]
    return min(found, key=lambda r: tuple(int(x) for x in r.split("."))) if found else None


def layout_paths() -> list[tuple[str, int]]:
    """(path fragment, CUDA major) pairs: folders only one CUDA major's wheels install into."""
    return [(e.contains, e.major) for e in cuda().paths]


def requirement_name(line: str) -> str | None:
    """The raw project name at the start of a Requires-Dist value, without parsing the rest."""
    m = _NAME_PREFIX.match(line)
    return m.group(1) if m else None


def pinned_major(key: str, specifier: str) -> int | None:
    """Major of an exact pin on a versioned CUDA wheel: cuda-toolkit[..]==13.0.2 -> 13."""
    if key not in versioned_names():
        return None
    from sparkenv.core.pins import pinned_clause

    version = pinned_clause(specifier)
    head = version.split(".")[0] if version else ""
    return int(head) if head.isdigit() else None

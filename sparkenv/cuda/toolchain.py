"""Toolchains that compile GPU code after install: Triton's ptxas and TORCH_CUDA_ARCH_LIST (G7).

What the stages read (a ptxas release from its file or its --version, the arch list's parts) and the
facts type they fill; data in data/toolchain.toml. The judgements over them are
sparkenv/rules/g7.py's, called by the audit and the gate alike.
"""

from __future__ import annotations

import os
import re
from collections.abc import Mapping
from dataclasses import dataclass

from sparkenv.cuda import coverage
from sparkenv.knowledge import toolchain

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
    import mmap  # here: the gate's checks import this module, only its forked reading calls this

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


def release_tuple(text: str) -> tuple[int, int]:
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

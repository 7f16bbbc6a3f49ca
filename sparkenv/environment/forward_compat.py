"""The CUDA forward-compatibility libcuda an image carries (the cuda-compat package), read from its file
name in the folders data/drivers.toml's [forward_compat] names: `libcuda.so.580.95.05` is the user-space
driver that package installs and the container runtime loads instead of the host's, where the GPU allows
it. Nothing is loaded or executed; a folder that cannot be listed holds none."""

from __future__ import annotations

import os
import re
from collections.abc import Iterable

from sparkenv.knowledge import drivers

_LIBCUDA = re.compile(r"libcuda\.so\.(\d+(?:\.\d+){1,2})")
_MAX_ENTRIES = 4096  # a compat folder holds a handful of files; past this it is not one


def _key(version: str) -> tuple[int, ...]:
    return tuple(int(part) for part in version.split("."))


def libcuda_version(dirs: Iterable[str] | None = None) -> str | None:
    """The newest forward-compatibility libcuda's version in `dirs` (default: data/drivers.toml's)."""
    if dirs is None:
        dirs = drivers().forward_compat.dirs
    found: list[str] = []
    for folder in dirs:
        try:
            with os.scandir(folder) as entries:
                for n, entry in enumerate(entries):
                    if n >= _MAX_ENTRIES:
                        break
                    m = _LIBCUDA.fullmatch(entry.name)
                    if m and entry.is_file():  # a link to a missing file is no library
                        found.append(m.group(1))
        except OSError:
            continue
    return max(found, key=_key) if found else None

"""The gate's default G1 probe: which CUDA torch needs and whether the loader will find it, proven from
files, without importing torch (an import costs seconds, and the workload imports it again).

Reads torch/version.py (the version label and `cuda = '13.0'` torch reports as torch.version.cuda), then
the DT_NEEDED entries of torch/lib/libtorch_cuda.so, each CUDA-major soname resolved the way ld.so will
(DT_RPATH/DT_RUNPATH with $ORIGIN — which is how the nvidia/cu13/lib wheel folders are found —
LD_LIBRARY_PATH, /etc/ld.so.cache, default folders).
"""

from __future__ import annotations

import os
import re
from pathlib import Path
from typing import Any

from sparkenv.cuda import elf, rules
from sparkenv.environment import ldcache
from sparkenv.environment.reading import UnreadableFile, read_text

_VERSION = re.compile(r"""^__version__\s*=\s*['"]([^'"]+)['"]""", re.M)
_CUDA = re.compile(r"""^cuda\s*(?::[^=\n]*)?=\s*(None|['"]([^'"]*)['"])""", re.M)
# The libraries that carry torch's CUDA linkage, first found wins (libtorch_cuda since torch 1.8).
_CUDA_LIBS = ("libtorch_cuda.so",)
_CPU_LIBS = ("libtorch_cpu.so", "libtorch.so")


def probe(site_dirs: list[str], machine: str) -> dict[str, Any]:
    for site in site_dirs:
        pkg = os.path.join(site, "torch")
        if os.path.isfile(os.path.join(pkg, "version.py")) or os.path.isfile(
            os.path.join(pkg, "__init__.py")
        ):
            return _read(pkg, machine)
    return {"found": False}


def _read(pkg: str, machine: str) -> dict[str, Any]:
    out: dict[str, Any] = {"found": True, "package_dir": pkg, "version": None, "cuda": None, "library": None}
    try:
        text = read_text(os.path.join(pkg, "version.py"), what="torch/version.py", limit=1 << 20)
    except UnreadableFile as exc:
        out["error"] = str(exc)
        return out
    m = _VERSION.search(text)
    out["version"] = m.group(1) if m else None
    c = _CUDA.search(text)
    out["cuda"] = c.group(2) if c and c.group(1) != "None" else None
    lib_dir = os.path.join(pkg, "lib")
    library = next((n for n in _CUDA_LIBS if os.path.isfile(os.path.join(lib_dir, n))), None)
    if library is None:
        out["cpu_library"] = next((n for n in _CPU_LIBS if os.path.isfile(os.path.join(lib_dir, n))), None)
        return out
    path = os.path.join(lib_dir, library)
    out["library"] = str(Path("torch") / "lib" / library)
    try:
        info = elf.read_file(path)
    except OSError as exc:
        out["error"] = f"{path}: {exc.strerror or exc}"
        return out
    if not isinstance(info, elf.ElfInfo):
        out["error"] = f"{path}: {info.reason if info else 'not an ELF file'}"
        return out
    out["machine"] = info.machine
    needed = []
    for soname in info.needed:
        major = rules.soname_major(soname)
        if major is None:
            continue
        found, how = ldcache.resolve(soname, path, info.rpath, info.runpath, machine)
        entry: dict[str, Any] = {"soname": soname, "major": major, "found": found, "how": how}
        if found:
            lib = _elf_or_none(found)
            if lib is not None and lib.machine != info.machine:
                entry["machine"] = lib.machine
        needed.append(entry)
    out["needed"] = needed
    return out


def _elf_or_none(path: str) -> elf.ElfInfo | None:
    try:
        info = elf.read_file(path)
    except OSError:
        return None
    return info if isinstance(info, elf.ElfInfo) else None

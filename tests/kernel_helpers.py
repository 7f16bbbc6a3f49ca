"""Real CUDA kernels for the G7 tests: nvcc 13 builds one tiny extension per target set, and gcc +
objcopy lay real fatbins out the way large NVIDIA libraries do (in .ldata, or lost in a big file)."""

from __future__ import annotations

import shutil
import struct
import subprocess
from pathlib import Path

import pytest

KERNEL = (
    "__global__ void k(float* x) { x[threadIdx.x] *= 2.f; }\n"
    'extern "C" void run(float* x) { k<<<1, 32>>>(x); }\n'
)

# name -> nvcc -gencode values (what the issue asks for: sm_90 only, sm_120, sm_120a, sm_121a,
# compute_90 PTX only, a fat mix; plus LTO-IR only)
BUILDS: dict[str, list[str]] = {
    "sm90": ["arch=compute_90,code=sm_90"],
    "sm120": ["arch=compute_120,code=sm_120"],
    "sm120a": ["arch=compute_120a,code=sm_120a"],
    "sm121a": ["arch=compute_121a,code=sm_121a"],
    "ptx90": ["arch=compute_90,code=compute_90"],
    "fat": [
        "arch=compute_80,code=sm_80",
        "arch=compute_90,code=sm_90",
        "arch=compute_120,code=sm_120",
        "arch=compute_120,code=compute_120",
    ],
    "lto90": ["arch=compute_90,code=lto_90"],
    "sm75": ["arch=compute_75,code=sm_75"],
}


def nvcc() -> str:
    found = shutil.which("nvcc")
    if found is None:
        pytest.fail("nvcc (CUDA 13) is needed to build real kernels; CI and this machine kind ship it")
    return found


class Kernels:
    def __init__(self, root: Path) -> None:
        self.root = root
        (root / "k.cu").write_text(KERNEL)
        self._built: dict[str, Path] = {}

    def so(self, name: str) -> Path:
        """A shared object whose .nv_fatbin holds BUILDS[name]."""
        if name not in self._built:
            out = self.root / f"lib{name}.so"
            if name.startswith("lto"):  # nvcc links LTO-IR away in a .so; ship it as libraries do
                self._built[name] = self.with_section(self.plain(), ".nv_fatbin", self.fatbin(name), name)
                return self._built[name]
            args = [nvcc(), "-shared", "-Xcompiler", "-fPIC", "-o", out.name, "k.cu"]
            for code in BUILDS[name]:
                args[1:1] = ["-gencode", code]
            subprocess.run(args, cwd=self.root, check=True, timeout=300, capture_output=True)
            self._built[name] = out
        return self._built[name]

    def fatbin(self, name: str) -> Path:
        """A bare fatbin file (nvcc -fatbin) holding BUILDS[name]."""
        out = self.root / f"{name}.fatbin"
        if not out.exists():
            args = [nvcc(), "-fatbin", "-o", out.name, "k.cu"]
            if name.startswith("lto"):
                args[1:1] = ["-rdc=true"]
            for code in BUILDS[name]:
                args[1:1] = ["-gencode", code]
            subprocess.run(args, cwd=self.root, check=True, timeout=300, capture_output=True)
        return out

    def plain(self) -> Path:
        """A gcc-built shared object without GPU code."""
        out = self.root / "libplain.so"
        if not out.exists():
            (self.root / "plain.c").write_text("int plain(void) { return 1; }\n")
            subprocess.run(
                ["gcc", "-shared", "-fPIC", "-o", out.name, "plain.c"],
                cwd=self.root,
                check=True,
                timeout=120,
                capture_output=True,
            )
        return out

    def with_section(self, base: Path, section: str, content: Path, name: str, offset: int = 0) -> Path:
        """`base` plus a section `section` holding `content` (shifted by `offset` bytes, so the
        fatbin is off the 8-byte grid as in a data section), added by objcopy: a real ELF."""
        data = self.root / f"{name}.{section.strip('.')}.bin"
        data.write_bytes(b"\0" * offset + content.read_bytes())
        out = self.root / f"lib{name}.so"
        subprocess.run(
            [
                "objcopy",
                "--add-section",
                f"{section}={data}",
                "--set-section-flags",
                f"{section}=alloc,load,readonly,data,contents",
                str(base),
                str(out),
            ],
            check=True,
            timeout=120,
            capture_output=True,
        )
        return out

    def header_flood(self, count: int) -> Path:
        """A data blob of `count` well-formed, empty fatbin headers back to back (issue 11's flood)."""
        out = self.root / f"flood{count}.bin"
        out.write_bytes(struct.pack("<IHHQ", 0xBA55ED50, 1, 16, 0) * count)
        return out

    def zeros(self, size: int) -> Path:
        out = self.root / f"zeros{size}.bin"
        with open(out, "wb") as fh:
            fh.truncate(size)
        return out


def cuda_ptxas() -> Path:
    """The CUDA 13 toolkit's ptxas binary itself (PATH may hold a shell wrapper around it)."""
    import os

    candidates = [os.path.join(os.environ.get("CUDA_HOME", "/usr/local/cuda"), "bin", "ptxas")]
    compiler = shutil.which("nvcc")
    if compiler:
        candidates.append(os.path.join(os.path.dirname(os.path.realpath(compiler)), "ptxas"))
    candidates.append(shutil.which("ptxas") or "")
    for c in candidates:
        if c and os.path.isfile(c):
            with open(c, "rb") as fh:
                if fh.read(4) == b"\x7fELF":
                    return Path(c)
    pytest.fail("the CUDA 13 toolkit's ptxas binary is needed (it ships with nvcc)")

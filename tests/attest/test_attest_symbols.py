"""A kernel that ran is attributed to the shared object whose GPU code defines it, read from the symbol
tables of the cubins nvcc 13 embeds (and PTX's entries), with the name patterns as the fallback; the report
says which way each kernel was attributed. The records' names are the ones torch's profiler writes
(demangled): made here with binutils' c++filt from the host side's symbols, an independent demangler."""

from __future__ import annotations

import json
import shutil
import subprocess
from pathlib import Path

import attest_helpers as ah
import pytest

from sparkenv.attest import run
from sparkenv.cuda import demangle, fatbin
from sparkenv.rules import attest_kernels as ak
from sparkenv.rules.attest_g7 import kernels as g7

SOURCE = r"""
namespace flash {
struct Flash_fwd_params { const float* q; float* o; int n; };
template <int HeadDim, bool IsCausal>
__global__ void flash_fwd_kernel(Flash_fwd_params p) {
  int i = threadIdx.x; if (i < p.n) p.o[i] = p.q[i] * HeadDim;
}
}
namespace mylib { __global__ void scale_rows(float* x, int n) { if (threadIdx.x < n) x[threadIdx.x] *= 2; } }
extern "C" __global__ void plain_kernel(float* x) { x[threadIdx.x] += 1; }
extern "C" void launch(flash::Flash_fwd_params p) {
  flash::flash_fwd_kernel<64, true><<<1, 32>>>(p);
  mylib::scale_rows<<<1, 32>>>(p.o, p.n);
  plain_kernel<<<1, 1>>>(p.o);
}
"""
WANTED = {
    "void flash::flash_fwd_kernel<64, true>(flash::Flash_fwd_params)",
    "mylib::scale_rows(float*, int)",
    "plain_kernel",
}
BUILDS = {  # name -> nvcc arguments: machine code; PTX only, uncompressed; PTX only, nvcc's default (zstd)
    "libstandin_sass.so": ["-gencode", "arch=compute_90,code=sm_90"],
    "libstandin_ptx.so": ["-gencode", "arch=compute_90,code=compute_90", "--compress-mode=none"],
    "libstandin_zptx.so": ["-gencode", "arch=compute_90,code=compute_90"],
}


@pytest.fixture(scope="module")
def built(tmp_path_factory) -> dict[str, Path]:
    nvcc = shutil.which("nvcc")
    if nvcc is None:
        pytest.fail("nvcc (CUDA 13) is needed to build real fatbins; this machine kind ships it")
    root = tmp_path_factory.mktemp("standin")
    (root / "k.cu").write_text(SOURCE)
    for name, args in BUILDS.items():
        cmd = [nvcc, "-shared", "-Xcompiler", "-fPIC", *args, "-o", name, "k.cu"]
        subprocess.run(cmd, cwd=root, check=True, timeout=300, capture_output=True)
    return {name: root / name for name in BUILDS}


def _profiler_names(lib: Path) -> set[str]:
    """The kernels' names as torch's profiler records them: nvcc gives each kernel a host function of the
    same name (mangled with internal linkage, so not the cubin's spelling); binutils' c++filt demangles."""
    nm = subprocess.run(["nm", "--defined-only", str(lib)], check=True, capture_output=True, text=True)
    mangled = [ln.split()[-1] for ln in nm.stdout.splitlines() if ln.split()[1:2] in (["t"], ["T"])]
    shown = subprocess.run(["c++filt"], input="\n".join(mangled), check=True, capture_output=True, text=True)
    return {n for n in shown.stdout.splitlines() if n in WANTED}


def _record(tmp: Path, names: list[tuple[str, int]], libraries: list[Path]) -> Path:
    rows = [
        {"kind": "header", "version": 1, "pid": 7, "argv": ["model.py"], "torch": "2.11.0+cu130",
         "torch_cuda": "13.0", "window_s": 3.0},
        *({"kind": "kernel", "name": n, "device": 0, "under": "", "count": 10, "gpu_ns": ns}
          for n, ns in names),
        {"kind": "libraries", "paths": [str(p) for p in libraries]},
        {"kind": "end", "reason": "seconds", "window_s": 3.0, "read_s": 0.01, "capability": [9, 0],
         "device_ns": sum(ns for _, ns in names)},
    ]  # fmt: skip
    path = tmp / "attest-7.jsonl"
    path.write_text("".join(json.dumps(r) + "\n" for r in rows))
    return path


def test_the_kernels_a_cubin_defines_are_read_from_its_symbol_table(built):
    found = fatbin.kernel_names(str(built["libstandin_sass.so"]))
    assert found.complete and found.cubins >= 1 and found.compressed == 0
    assert {demangle.demangle(n) for n in found.names} == WANTED
    # the mangled names are the ones the host's launch stubs carry
    assert "_ZN5flash16flash_fwd_kernelILi64ELb1EEEvNS_16Flash_fwd_paramsE" in found.names


def test_ptx_entries_are_read_and_compressed_ptx_is_said_not_read(built):
    plain = fatbin.kernel_names(str(built["libstandin_ptx.so"]))
    assert plain.complete and plain.ptx == 1 and {demangle.demangle(n) for n in plain.names} == WANTED
    packed = fatbin.kernel_names(str(built["libstandin_zptx.so"]))
    assert not packed.complete and packed.compressed == 1 and not packed.names
    assert packed.problem == "1 compressed fatbin entries not read"


def test_the_demangler_writes_names_as_binutils_does(built):
    names = _profiler_names(built["libstandin_sass.so"])
    assert names == WANTED
    assert {
        demangle.demangle(n) for n in fatbin.kernel_names(str(built["libstandin_sass.so"])).names
    } == names


def test_each_kernel_is_attributed_to_the_library_that_defines_it(built, tmp_path):
    """Two libraries loaded: the kernels are the machine-code build's; the name pattern would have called
    flash::flash_fwd_kernel flash-attn's and left the others unattributed."""
    names = sorted(_profiler_names(built["libstandin_sass.so"]))
    rows = [(n, 1_000_000 * (i + 1)) for i, n in enumerate(names)]
    path = _record(
        tmp_path, rows, [built["libstandin_zptx.so"], built["libstandin_sass.so"], Path("/nope.so")]
    )
    facts = run.gather(str(path), "sdpa", {})
    assert facts.defined_in == {n: (str(built["libstandin_sass.so"]),) for n in names}
    for n in names:
        assert ak.library(n, facts.defined_in) == ("libstandin_sass.so", ak.BY_SYMBOLS)
        assert ak.library(n) != ("libstandin_sass.so", ak.BY_SYMBOLS)  # without the symbol tables
    flash = "void flash::flash_fwd_kernel<64, true>(flash::Flash_fwd_params)"
    assert ak.library(flash) == ("flash-attn", ak.BY_PATTERN)
    assert ak.library("mylib::scale_rows(float*, int)") == (ak.OTHER_LIBRARY, ak.UNATTRIBUTED)
    table = next(f for f in g7(facts) if f.subject == "GPU time")
    assert "by library: libstandin_sass.so 100.0 % (by symbol table)" in table.summary
    assert "kernels attributed to libraries: by symbol table: 3 (100.0 % of GPU time)" in table.evidence
    assert any(e.startswith(f"{built['libstandin_zptx.so']}: 0 kernel name(s) read") and "compressed" in e
               for e in table.evidence)  # fmt: skip


def test_a_library_read_only_in_part_leaves_its_kernels_to_the_name_patterns(built, tmp_path):
    names = sorted(_profiler_names(built["libstandin_zptx.so"]))
    path = _record(tmp_path, [(n, 1_000_000) for n in names], [built["libstandin_zptx.so"]])
    facts = run.gather(str(path), "sdpa", {})
    assert facts.defined_in == {}
    table = next(f for f in g7(facts) if f.subject == "GPU time")
    assert "by name pattern: 1 (33.3 % of GPU time); by unattributed: 2 (66.7 % of GPU time)" in "".join(
        table.evidence
    )


def test_the_recorded_extension_kernel_from_the_h100_is_attributed_by_symbol_table(tmp_path):
    """The H100's record of ext_case.py with the machine-code build: its kernel, named by torch's profiler
    there, is the one libext_sass.so (built there by nvcc, kept as a fixture) defines; the PTX-only build
    keeps its PTX compressed (nvcc 13's default): its kernel stays unattributed, and the report says why."""
    sass = run.gather(str(ah.relocated(tmp_path, "ext-sass", "libext_sass.so")), "sdpa", {})
    saxpy = "sparkenv_attest_saxpy(int, float, float const*, float*)"
    assert sass.defined_in[saxpy] == (str(ah.fixture("libext_sass.so")),)
    assert ak.library(saxpy, sass.defined_in) == ("libext_sass.so", ak.BY_SYMBOLS)
    ptx = run.gather(str(ah.relocated(tmp_path, "ext-ptx", "libext_ptx.so")), "sdpa", {})
    assert saxpy not in ptx.defined_in
    read = next(s for s in ptx.symbol_reads if s.path.endswith("libext_ptx.so"))
    assert not read.complete and read.problem == "1 compressed fatbin entries not read"


@pytest.mark.parametrize(
    "damage",
    [b"", b"\x7fELF" + b"\0" * 60, b"not an elf at all"],
    ids=["empty", "bare-header", "text"],
)
def test_a_damaged_file_is_a_reason_never_an_exception(tmp_path, damage):
    path = tmp_path / "lib.so"
    path.write_bytes(damage)
    found = fatbin.kernel_names(str(path))
    assert not found.names


def test_a_cut_cubin_is_a_reason(built, tmp_path):
    """The machine-code build cut inside its fatbin: what was read is kept, the rest said."""
    data = built["libstandin_sass.so"].read_bytes()
    at = data.find(b"\x7fELF", 16)  # the first cubin inside the fatbin
    assert at > 0
    path = tmp_path / "cut.so"
    path.write_bytes(data[: at + 200])
    found = fatbin.kernel_names(str(path))
    assert not found.complete


def test_flash_attns_own_library_claims_kernels_its_pattern_does_not_name(built, tmp_path):
    """A FlashAttention build whose kernel names the data's pattern does not know (a release that renames
    them), loaded as flash_attn_2_cuda*.so: the kernels its GPU code defines are flash-attn's, so SDPA asked
    for and these run is G2's FAIL, traced to that library."""
    from sparkenv.core.report import Status
    from sparkenv.rules.attest_g2 import attention

    lib = tmp_path / "flash_attn_2_cuda.cpython-312-aarch64-linux-gnu.so"
    shutil.copyfile(built["libstandin_sass.so"], lib)
    assert ak.family("plain_kernel") is None  # by its name alone: nobody's
    path = _record(
        tmp_path, [("plain_kernel", 9_000_000), ("mylib::scale_rows(float*, int)", 1_000_000)], [lib]
    )
    facts = run.gather(str(path), "sdpa", {})
    assert [a.name for a, _n, _ns in ak.backends(facts.kernels, facts.defined_in)] == ["flash-attn"]
    (g2,) = attention(facts)
    assert g2.status is Status.FAIL, g2
    assert "ran flash-attn, not the SDPA asked for: 100.0 % of the window's GPU time" in g2.summary
    assert f"its kernels come from {lib.name} (by symbol table): 10.0 ms" in g2.evidence, g2.evidence
    family = next(f for f in g7(facts) if f.subject == "family flash-attn")
    assert family.summary.startswith(
        "flash-attn (flash-attn): 100.0 % of GPU time, 10.0 ms, 2 kernel(s), 20 "
    )

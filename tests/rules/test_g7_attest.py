"""Rows of rules/attest_g7.py (G7 at Stage.ATTEST): PTX JIT-compiled in the window, GPU operators run on
the CPU, and GPU time per family, from records taken on an H100 (tests/fixtures/attest/)."""

from __future__ import annotations

import dataclasses
import json

import attest_helpers as ah
import pytest
from rule_table import Row, check, ids

from sparkenv.core.report import Status
from sparkenv.facts.attest import LibraryCode

RULE = "attest_g7.kernels"
JIT = "CUDA JIT cache"
USE = "GPU use"
GEMM = "fallback FP4/FP8 GEMM"
CUFILE = "/opt/torch/.venv/lib/python3.12/site-packages/nvidia/cu13/lib/libcufile.so.0"


def _marlin(c, capability=None):  # type: ignore[no-untyped-def]
    found = ah.gathered(ah.relocated(c.tmp_path, "marlin", "libmarlin_standin.so"))
    return ah.on_capability(found, capability) if capability else found


def _no_host_pids(c):  # type: ignore[no-untyped-def]
    """nvml-busy's record as a container without the host's PID namespace would write it: NVML's process IDs
    are the host's, so the busy program's is listed among the others. Made from the real record (a PID
    namespace was not set up on the GPU machine): the header's host_pids and each sample's lists moved."""
    out = c.tmp_path / "nvml-no-host-pids"
    out.mkdir()
    rows = []
    for line in ah.fixture("nvml-busy/nvml-652.jsonl").read_text().splitlines():
        row = json.loads(line)
        if row["kind"] == "header":
            row["host_pids"] = False
        elif row["kind"] == "sample":
            row["others"], row["memory_mib"], row["sm_percent"] = len(row["memory_mib"]), [], []
        rows.append(json.dumps(row))
    (out / "nvml-652.jsonl").write_text("\n".join(rows) + "\n")
    return ah.gathered(out)


ROWS = [
    Row(RULE, "machine code for the GPU: the JIT cache stays empty", lambda c: ah.facts("ext-sass"), JIT,
        Status.PASS, None, "stayed empty"),
    Row(RULE, "a PTX-only extension: JIT-compiled, its library named",
        lambda c: ah.gathered(ah.relocated(c.tmp_path, "ext-ptx", "libext_ptx.so")), JIT, Status.WARN,
        "code=sm_XY", "2 file(s), 5.1 KiB in the private cache; PTX only for this GPU in libext_ptx.so"),
    Row(RULE, "cuDNN's run-time generated attention kernels fill the cache by design",
        lambda c: ah.facts("sdpa-cudnn"), JIT, Status.INFO, "CUDA_CACHE_PATH on a volume",
        "the kernels cuDNN attention generates at run time"),
    Row(RULE, "a Linear layer left on the CPU", lambda c: ah.facts("cpu-op"), "aten::linear", Status.FAIL,
        ".to('cuda')", "aten::linear ran on the CPU 718 times: 731.1 ms, 9.1 % of the 8.0 s window"),
    Row(RULE, "every operator on the GPU", lambda c: ah.facts("sdpa-math"), "operators on the CPU",
        Status.PASS, None, "no GPU operator ran on the CPU"),
    Row(RULE, "a training step's table adds up", lambda c: ah.facts("train"), "GPU time", Status.PASS, None,
        "the families' shares add up to 100.0 % of the profiler's total"),
    Row(RULE, "a family's row", lambda c: ah.facts("train"), "family cuDNN attention", Status.INFO, None,
        "cuDNN attention (cuDNN): 6.9 % of GPU time, 0.2 ms, 2 kernel(s), 8 launches"),
    Row(RULE, "cuDNN's generated kernels fill the cache; a PTX-only library none of whose kernels ran: "
        "not blamed", lambda c: ah.gathered(ah.fixture("flash-sdpa"),
                                            library_code=(LibraryCode(CUFILE, ("compute_90",)),)),
        JIT, Status.INFO, "CUDA_CACHE_PATH on a volume", "the kernels cuDNN attention generates at run time"),
    Row(RULE, "Marlin served the GEMMs on SM 12.1, where the data names CUTLASS / cuBLASLt FP4",
        lambda c: _marlin(c, (12, 1)), GEMM, Status.WARN, "--moe-backend flashinfer_cutlass",
        "FP4/FP8 GEMM ran on Marlin: 95.2 % of the window's GPU time, a fallback while CUTLASS, cuBLAS(Lt) "
        "exist for SM 12.1"),
    Row(RULE, "Marlin served the GEMMs on SM 9.0 (no native FP4 there)", _marlin, GEMM, Status.INFO, None,
        "the data names no faster family for SM 9.0"),
    Row(RULE, "no fallback family is hot", lambda c: ah.facts("train"), "fallback paths", Status.PASS, None,
        "no hot op (≥ 10 % of GPU time) ran a fallback family: FP4/FP8 GEMM (Marlin)"),
    Row(RULE, "a CUDA program with no torch used the GPU (NVML)", lambda c: ah.facts("nvml-busy"), USE,
        Status.PASS, None, "the workload used the GPU: 1 process(es), up to 1,030 MiB of GPU memory, SM busy "
        "up to 98 % of a sample (17 NVML sample(s) over 10.1 s)"),
    Row(RULE, "numpy never reached the GPU (NVML)", lambda c: ah.facts("nvml-numpy"), USE, Status.WARN,
        "CUDA_VISIBLE_DEVICES empty",
        "the workload held no GPU memory and ran nothing on the GPU in the window (17 NVML sample(s) over "
        "10.2 s): it ran on the CPU"),
    Row(RULE, "a torch model left on the CPU (NVML)", lambda c: ah.facts("nvml-torch-cpu"), USE, Status.WARN,
        "a device option left at cpu", "it ran on the CPU"),
    Row(RULE, "NVML's host PIDs cannot be matched in this PID namespace", _no_host_pids, USE, Status.SKIP,
        "--pid=host", "NVML lists 1 process(es) on the GPU by the host's process IDs, which this PID "
        "namespace cannot match to the workload's: GPU use not judged"),
    Row(RULE, "the table names the library that defines a kernel, by its symbol table",
        lambda c: ah.gathered(ah.flash_attn_ran(c.tmp_path)), "GPU time", Status.PASS, None,
        "by library: libflash_standin.so 87.2 % (by symbol table), torch (libtorch_cuda) 7.7 % (by name "
        "pattern)"),
    Row(RULE, "a killed process: the record is partial",
        lambda c: ah.gathered(ah.cut(c.tmp_path, "train", 30)), "GPU time", Status.WARN, "--seconds",
        "the window did not end in pid"),
    Row(RULE, "numpy's window (NVML only): no JIT cache to watch", lambda c: ah.facts("nvml-numpy"), JIT,
        Status.SKIP, None, "the workload had no private CUDA JIT cache (CUDA_CACHE_PATH): JIT not observed"),
    Row(RULE, "numpy's window (NVML only): no torch window to read operators from",
        lambda c: ah.facts("nvml-numpy"), "operators on the CPU", Status.SKIP, None,
        "no finished window of a CUDA build of torch: operators' devices not seen"),
    Row(RULE, "a torch model left whole on the CPU", lambda c: ah.facts("nvml-torch-cpu"), "aten::linear",
        Status.FAIL,
        "move its module and inputs to the GPU (.to('cuda')): a layer left out of model.to(device), or a "
        "tensor made on the CPU in forward()",
        "aten::linear ran on the CPU 15,783 times: 4,238.2 ms, 84.8 % of the 5.0 s window; no GPU kernel "
        "ran at all"),
    Row(RULE, "one operator call on the CPU, below the FAIL share", lambda c: ah.facts("cpu-op"),
        "aten::relu", Status.INFO, ".to('cuda')",
        "aten::relu ran on the CPU 1 times: 27.9 ms, 0.3 % of the 8.0 s window, while the rest of the model "
        "ran on the GPU"),
    Row(RULE, "PTX compiled, no library read here PTX-only (its library not on this machine)",
        lambda c: ah.facts("ext-ptx"), JIT, Status.WARN,
        "rebuild the library with machine code for this GPU (nvcc -gencode arch=compute_XY,code=sm_XY), "
        "or keep the JIT cache between starts (CUDA_CACHE_PATH on a volume, CUDA_CACHE_MAXSIZE large)",
        "the driver JIT-compiled PTX during the window: 2 file(s), 5.1 KiB in the private cache; no loaded "
        "library read here has only PTX for this GPU (PTX made at run time, or a process without a record)"),
    Row(RULE, "cuDNN's generated kernels: the fix is the cache kept, not a rebuild",
        lambda c: ah.facts("train"), JIT, Status.INFO,
        "keep the JIT cache between starts (CUDA_CACHE_PATH on a volume) so each start does not compile "
        "them again",
        "6 file(s), 841.4 KiB in the private cache; the kernels cuDNN attention generates at run time "
        "(compiled from PTX by design)"),
    Row(RULE, "the table's line says the window's cost and each library's share",
        lambda c: ah.facts("cpu-op"), "GPU time", Status.PASS, None,
        "20 kernels, 20,772 launches, 173.6 ms of GPU time in 1 process(es); the families' shares add up "
        "to 100.0 % of the profiler's total; by library: cuBLAS / cuBLASLt 44.4 % (by name pattern), CUDA "
        "driver (copies and fills) 36.9 % (by name pattern), torch (libtorch_cuda) 18.7 % (by name "
        "pattern); the window cost the workload 1.28 s after it ended"),
]  # fmt: skip


@pytest.mark.parametrize("row", ROWS, ids=ids(ROWS))
def test_g7_attest(row, ctx):
    check(row, ctx)


def test_the_tables_evidence_says_each_window_and_how_kernels_were_attributed():
    from sparkenv.rules.attest_g7 import kernels

    table = next(f for f in kernels(ah.facts("ext-ptx")) if f.subject == "GPU time")
    assert table.evidence == (
        "pid 780: window 3.0 s ended by seconds, read in 2.83 s",
        "kernels attributed to libraries: by name pattern: 4 (46.2 % of GPU time); by unattributed: 1 "
        "(53.8 % of GPU time)",
    ), table.evidence


def test_the_jit_evidence_names_the_cache_the_gpu_and_the_source():
    from sparkenv.knowledge import kernel_paths
    from sparkenv.rules.attest_g7 import kernels

    found = ah.facts("ext-ptx")
    jit = next(f for f in kernels(found) if f.subject == JIT)
    folder = next(r.jit_folder for r in found.records if r.jit_folder)
    assert jit.evidence == (f"CUDA_CACHE_PATH={folder}", "capability: 9.0", kernel_paths().jit.source)


def _g7(found, subject: str):
    from sparkenv.rules.attest_g7 import kernels

    (f,) = [f for f in kernels(found) if f.subject == subject]
    return f


def _cpu_torch(found):
    """The records as a CPU-only torch writes them (2.9.0+cpu: torch_cuda unset); the record was taken with
    a CUDA build holding its model on the CPU, the same window otherwise."""
    records = tuple(dataclasses.replace(r, torch="2.9.0+cpu", torch_cuda=None) for r in found.records)
    return dataclasses.replace(found, records=records)


def test_a_cpu_only_torch_is_named_as_such():
    found = _cpu_torch(ah.facts("nvml-torch-cpu"))
    cpu = _g7(found, "operators on the CPU")
    assert cpu.status is Status.INFO
    assert cpu.summary == "torch 2.9.0+cpu is a CPU-only build: every operator ran on the CPU"
    use = _g7(found, USE)
    assert use.status is Status.WARN and use.summary.endswith(
        "it ran on the CPU; its torch 2.9.0+cpu is a CPU-only build"
    ), use.summary


@pytest.mark.parametrize(
    ("change", "says"),
    [
        ({"error": "NVML Shared Library Not Found"},
         "NVML could not be read (NVML Shared Library Not Found): the workload's GPU use not seen"),
        ({"samples": 0}, "no NVML sample was taken: the workload ended at once"),
    ],
)  # fmt: skip
def test_nvml_not_read_is_a_skip_that_says_why(change, says):
    found = ah.facts("nvml-busy")
    found = dataclasses.replace(found, gpu_use=tuple(dataclasses.replace(u, **change) for u in found.gpu_use))
    use = _g7(found, USE)
    assert use.status is Status.SKIP and use.summary == says, use


@pytest.mark.parametrize(("extra", "status"), [(0, Status.FAIL), (-1, Status.WARN)])
def test_a_jit_cache_of_fail_bytes_or_more_is_a_fail(tmp_path, extra, status):
    from sparkenv.knowledge import kernel_paths

    limit = kernel_paths().jit.fail_bytes
    found = ah.gathered(ah.relocated(tmp_path, "ext-ptx", "libext_ptx.so"), jit_bytes=limit + extra)
    jit = _g7(found, JIT)
    assert jit.status is status, jit
    assert f"{(limit + extra) / 1024:,.1f} KiB in the private cache" in jit.summary
    assert "libext_ptx.so: " in "\n".join(jit.evidence)


def test_a_hot_fallback_on_a_gpu_the_record_does_not_name(ctx):
    found = ah.on_capability(_marlin(ctx), None)
    gemm = _g7(found, GEMM)
    assert gemm.status is Status.INFO and gemm.fix is None
    assert gemm.summary.endswith("; the data names no faster family for a GPU the record does not name")


def test_nothing_on_the_cpu_is_said_in_those_words():
    cpu = _g7(ah.facts("sdpa-math"), "operators on the CPU")
    assert cpu.status is Status.PASS and cpu.summary == "no GPU operator ran on the CPU in the window", cpu


def test_operators_on_the_cpu_come_largest_first():
    # nvml-torch-cpu: aten::linear 4,238.2 ms, aten::gelu 529.5 ms (by name, gelu would come first)
    from sparkenv.rules.attest_g7 import CPU_SUBJECT, kernels

    found = kernels(ah.facts("nvml-torch-cpu"))
    ops = [f.subject for f in found if f.subject.startswith("aten::")]
    assert ops == ["aten::linear", "aten::gelu"], ops
    assert CPU_SUBJECT not in [f.subject for f in found]


def test_the_host_pid_skip_keeps_what_nvml_saw(ctx):
    use = _g7(_no_host_pids(ctx), USE)
    assert use.status is Status.SKIP
    assert any(e.endswith("nvml-652.jsonl") for e in use.evidence), use.evidence
    assert "other processes NVML listed on the GPU at once: up to 1" in use.evidence, use.evidence


def test_a_familys_row_shows_its_five_largest_kernels():
    # train's torch (ATen) family ran 27 kernels: its row's evidence names the five with the most GPU time
    fam = _g7(ah.facts("train"), "family torch (ATen)")
    assert "27 kernel(s)" in fam.summary and len(fam.evidence) == 5, fam.evidence
    shown = "; from torch (libtorch_cuda) (by name pattern)"
    assert all(e.endswith(shown) for e in fam.evidence), fam.evidence

"""The facts of Stage.ATTEST: what a workload's own process launched during `sparkenv attest`'s window (the
probe's record, sparkenv/attest/inject/sitecustomize.py), the private CUDA JIT cache it was given, and the
GPU code of the shared objects it had loaded, where the cache filled. Frozen; no I/O here: the stage
(sparkenv/attest/record.py) reads the records into these."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field


@dataclass(frozen=True)
class KernelRow:
    """One GPU kernel (or copy/fill) name with the attention operators it was launched under."""

    name: str
    count: int
    gpu_ns: int
    under: str = ""  # callers among the probe's markers, outermost first, " > "-joined
    device: int = 0


@dataclass(frozen=True)
class CpuOp:
    """An outermost operator that launched nothing on the GPU: it ran on the CPU."""

    name: str
    count: int
    ns: int  # wall time inside it


@dataclass(frozen=True)
class ProcessRecord:
    """One process's window, as its record says; `finished` False: the record was cut (the process was
    killed, or ended, before the profiler stopped): what it holds is partial."""

    path: str
    pid: int
    argv: tuple[str, ...] = ()
    torch: str | None = None
    torch_cuda: str | None = None
    problem: str | None = None  # the probe could not profile (said in the record)
    finished: bool = False
    reason: str | None = None  # what ended the window: seconds, steps, exit
    window_s: float | None = None  # the window as it ran (or the last tick of a cut record)
    read_s: float | None = None  # what reading the profile cost the workload, after the window
    capability: tuple[int, int] | None = None
    kernels: tuple[KernelRow, ...] = ()
    cpu_ops: tuple[CpuOp, ...] = ()
    device_ns: int | None = None  # the probe's own total of every GPU event's time
    jit_folder: str | None = None
    jit_files: int | None = None
    jit_bytes: int | None = None
    libraries: tuple[str, ...] = ()
    late: bool = False  # the deadline passed before the main thread ran Python again


@dataclass(frozen=True)
class LibraryCode:
    """The fatbin targets of one loaded shared object (sparkenv/cuda/fatbin.py), read after the window."""

    path: str
    targets: tuple[str, ...]
    complete: bool = True
    payload: Mapping[str, int] | None = None


@dataclass(frozen=True)
class SymbolRead:
    """What one loaded shared object's fatbins say they define (sparkenv/cuda/fatbin.py kernel_names):
    `kernels` names read; `complete` False where some entries could not be read (compressed): a kernel
    missing from them may still be its."""

    path: str
    kernels: int
    complete: bool = True
    problem: str | None = None


@dataclass(frozen=True)
class GpuUse:
    """What NVML saw of the workload's process tree during the window (sparkenv/attest/gpu_use.py), read
    from sparkenv beside it: no torch needed. `error`: NVML could not be read; `host_pids` False: this
    PID namespace is not the host's, so NVML's process IDs cannot be matched to the workload's."""

    path: str
    root: int
    error: str | None = None
    host_pids: bool = True
    finished: bool = False
    samples: int = 0
    span_s: float = 0.0
    peak_mib: int = 0  # the most GPU memory the tree held at once
    on_gpu: tuple[int, ...] = ()  # processes of the tree NVML listed with memory or SM time
    max_sm: int | None = None  # the highest SM utilisation one of them had over a sample
    others: int = 0  # the most other processes NVML listed at once
    gpu_util_max: int | None = None


@dataclass(frozen=True)
class AttestFacts:
    records: tuple[ProcessRecord, ...]
    attention_wanted: str = "any"  # "sdpa", "flash-attn" or "any"
    wanted_why: str = ""
    library_code: tuple[LibraryCode, ...] = ()
    jit_folder: str | None = None  # the private cache the launcher made (also where no record came)
    jit_files: int | None = None
    jit_bytes: int | None = None
    notes: tuple[str, ...] = field(default_factory=tuple)
    # each recorded kernel name -> the loaded shared objects whose GPU code defines it (symbol tables)
    defined_in: Mapping[str, tuple[str, ...]] = field(default_factory=dict)
    symbol_reads: tuple[SymbolRead, ...] = ()
    gpu_use: tuple[GpuUse, ...] = ()

    @property
    def kernels(self) -> tuple[KernelRow, ...]:
        return tuple(k for r in self.records for k in r.kernels)

    @property
    def gpu_ns(self) -> int:
        return sum(k.gpu_ns for k in self.kernels)

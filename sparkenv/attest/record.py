"""Read the probe's records (attest-<pid>.jsonl) into facts/attest.py's facts. A record cut short (a killed
process: no end line, a half-written last line) is read as far as it goes and marked unfinished; a file
that is no record at all is a one-line error naming it (exit 2)."""

from __future__ import annotations

import json
import os
from typing import Any

from sparkenv.attest.gpu_use import PREFIX
from sparkenv.core.errors import SparkenvError
from sparkenv.cuda import fatbin
from sparkenv.cuda.demangle import demangle
from sparkenv.facts.attest import CpuOp, GpuUse, KernelRow, LibraryCode, ProcessRecord, SymbolRead

MAX_BYTES = 256 << 20


def paths(where: str) -> list[str]:
    """The probe's records in a folder (sorted), or the one file named (none when it is an NVML record)."""
    if os.path.isdir(where):
        return sorted(
            os.path.join(where, n)
            for n in os.listdir(where)
            if n.startswith("attest-") and n.endswith(".jsonl")
        )
    if os.path.isfile(where):
        return [] if _is_gpu_use(where) else [where]
    raise SparkenvError(f"{where}: no such attest record or folder")


def _is_gpu_use(path: str) -> bool:

    return os.path.basename(path).startswith(PREFIX) and path.endswith(".jsonl")


def gpu_use_paths(where: str) -> list[str]:
    """NVML's records of the workload's processes (attest/gpu_use.py) in a folder, or the one file named."""
    if os.path.isdir(where):
        found = (os.path.join(where, n) for n in os.listdir(where))
        return sorted(p for p in found if _is_gpu_use(p))
    return [where] if os.path.isfile(where) and _is_gpu_use(where) else []


def read_gpu_use(path: str) -> GpuUse:
    """One NVML record, read as far as it goes (a cut last line is left out), summed up."""
    rows = _rows(path)
    head = rows[0]
    if head.get("source") != "nvml":
        raise SparkenvError(f"{path}: no NVML header line: not an attest NVML record")
    try:
        samples = [r for r in rows[1:] if r["kind"] == "sample"]
        peak, on_gpu, max_sm, others, util = 0, set(), None, 0, None
        for r in samples:
            mem = {int(pid): int(mib) for pid, mib in r.get("memory_mib") or ()}
            sm = {int(pid): int(pct) for pid, pct in r.get("sm_percent") or ()}
            peak = max(peak, sum(mem.values()))
            on_gpu.update(p for p, mib in mem.items() if mib > 0)
            on_gpu.update(p for p, pct in sm.items() if pct > 0)
            if sm:
                max_sm = max(max_sm or 0, *sm.values())
            others = max(others, int(r.get("others") or 0))
            if r.get("gpu_util") is not None:
                util = max(util or 0, int(r["gpu_util"]))
        ends = [float(r["t"]) for r in rows[1:] if r["kind"] in ("sample", "end")]
        return GpuUse(
            path=path,
            root=int(head["root"]),
            error=head.get("error"),
            host_pids=bool(head.get("host_pids", True)),
            finished=any(r["kind"] == "end" for r in rows[1:]),
            samples=len(samples),
            span_s=max(ends) if ends else 0.0,
            peak_mib=peak,
            on_gpu=tuple(sorted(on_gpu)),
            max_sm=max_sm,
            others=others,
            gpu_util_max=util,
        )
    except (TypeError, ValueError, KeyError) as exc:
        raise SparkenvError(f"{path}: a malformed row ({exc.__class__.__name__}: {exc})") from None


def read(path: str) -> ProcessRecord:
    rows = _rows(path)
    if rows[0]["kind"] != "header":
        raise SparkenvError(f"{path}: no header line: not an attest record")
    try:
        return _record(path, rows)
    except (TypeError, ValueError, KeyError) as exc:
        raise SparkenvError(f"{path}: a malformed row ({exc.__class__.__name__}: {exc})") from None


def _rows(path: str) -> list[dict[str, Any]]:
    """The record's JSON lines, a cut last line left out; one line of error for a file that is no record."""
    try:
        with open(path, "rb") as fh:
            data = fh.read(MAX_BYTES + 1)
    except OSError as exc:
        raise SparkenvError(f"{path}: cannot read the attest record: {exc.strerror}") from None
    if len(data) > MAX_BYTES:
        raise SparkenvError(f"{path}: larger than {MAX_BYTES >> 20} MiB: not an attest record")
    rows: list[dict[str, Any]] = []
    for n, line in enumerate(data.splitlines(), 1):
        try:
            row = json.loads(line)
        except (ValueError, RecursionError):
            if n == len(data.splitlines()):
                break  # the last line, cut by a kill: the record ends before it
            raise SparkenvError(f"{path}: line {n} is not JSON: not an attest record") from None
        if not isinstance(row, dict) or not isinstance(row.get("kind"), str):
            raise SparkenvError(f"{path}: line {n} has no kind: not an attest record")
        rows.append(row)
    if not rows or rows[0]["kind"] != "header":
        raise SparkenvError(f"{path}: no header line: not an attest record")
    return rows


def _record(path: str, rows: list[dict[str, Any]]) -> ProcessRecord:
    head = rows[0]
    kernels, ops, libraries, jit, end, last_t, late = [], [], (), {}, None, 0.0, False
    for row in rows[1:]:
        kind = row["kind"]
        if kind == "kernel":
            kernels.append(
                KernelRow(
                    str(row["name"]), int(row["count"]), int(row["gpu_ns"]), str(row.get("under") or ""),
                    int(row.get("device") or 0),
                )
            )  # fmt: skip
        elif kind == "cpu_op":
            ops.append(CpuOp(str(row["name"]), int(row["count"]), int(row["ns"])))
        elif kind == "libraries":
            libraries = tuple(str(p) for p in row["paths"])
        elif kind == "jit_cache":
            jit = row
        elif kind in ("tick", "late"):
            last_t = max(last_t, float(row["t"]))
            late = late or kind == "late"
        elif kind == "end":
            end = row
    cap = (end or {}).get("capability")
    return ProcessRecord(
        path=path,
        pid=int(head["pid"]),
        argv=tuple(str(a) for a in head.get("argv") or ()),
        torch=head.get("torch"),
        torch_cuda=head.get("torch_cuda"),
        problem=head.get("problem") or (end or {}).get("problem"),
        finished=end is not None,
        reason=(end or {}).get("reason"),
        window_s=float(end["window_s"]) if end else last_t,
        read_s=float(end["read_s"]) if end and "read_s" in end else None,
        capability=(int(cap[0]), int(cap[1])) if cap else None,
        kernels=tuple(kernels),
        cpu_ops=tuple(ops),
        device_ns=int(end["device_ns"]) if end and "device_ns" in end else None,
        jit_folder=jit.get("folder") or head.get("jit_cache"),
        jit_files=int(jit["files"]) if "files" in jit else None,
        jit_bytes=int(jit["bytes"]) if "bytes" in jit else None,
        libraries=libraries,
        late=late,
    )


def library_code(records: list[ProcessRecord]) -> tuple[LibraryCode, ...]:
    """The fatbin targets of the shared objects the processes had loaded, read only where a JIT cache
    filled (the question is then which of them had only PTX): headers only, as the audit reads them."""

    wanted = dict.fromkeys(p for r in records if r.jit_files for p in r.libraries)
    out = []
    for path in wanted:
        if not os.path.isfile(path):
            continue
        found = fatbin.scan(path, deep=False)
        if found.targets:
            out.append(
                LibraryCode(
                    path, tuple(sorted(t.name for t in found.targets)), found.complete,
                    {t.name: n for t, n in found.payload.items()},
                )
            )  # fmt: skip
    return tuple(out)


def library_kernels(
    records: list[ProcessRecord],
) -> tuple[dict[str, tuple[str, ...]], tuple[SymbolRead, ...]]:
    """Which loaded shared object defines each kernel the records name: every library a process had mapped
    is read for the kernels its fatbins define (cubins' symbol tables, PTX entries), and a recorded name
    matches a defined one as it is (an `extern "C"` kernel, a mangled name) or as torch's profiler writes
    it, demangled by the same C++ runtime function. (name -> paths, what each library gave)."""

    wanted = {k.name for r in records for k in r.kernels}
    found: dict[str, list[str]] = {}
    reads = []
    for path in dict.fromkeys(p for r in records for p in r.libraries):
        if not wanted or not os.path.isfile(path):
            continue
        names = fatbin.kernel_names(path)
        if not names.names and names.complete:
            continue  # no GPU code here
        reads.append(SymbolRead(path, len(names.names), names.complete, names.problem))
        for mangled in names.names:
            for form in {mangled, demangle(mangled)}:
                if form in wanted:
                    found.setdefault(form, []).append(path)
    return {k: tuple(v) for k, v in found.items()}, tuple(reads)

"""G7 at Stage.ATTEST (`sparkenv attest`, `gate --attest`): what the workload's window ran on this GPU —
kernels JIT-compiled from PTX (the private CUDA JIT cache filled: which library had only PTX), GPU
operators that ran on the CPU with their share of the window, and the GPU time per backend family and
library (each kernel's library from the symbol tables of the loaded libraries' GPU code, else by its
name: data/kernel_paths.toml)."""

from __future__ import annotations

from functools import partial
from typing import TYPE_CHECKING

from sparkenv.core.report import Finding, GotchaId, Status
from sparkenv.knowledge import kernel_paths
from sparkenv.rules.attest_kernels import (
    OTHER,
    Defined,
    capability,
    families,
    family,
    libraries,
    library,
    ms,
    percent,
    slower_paths,
)
from sparkenv.rules.g7_coverage import judge

if TYPE_CHECKING:
    from sparkenv.facts.attest import AttestFacts, KernelRow, ProcessRecord

_finding = partial(Finding, GotchaId.G7)
JIT_SUBJECT = "CUDA JIT cache"
CPU_SUBJECT = "operators on the CPU"
TIME_SUBJECT = "GPU time"
USE_SUBJECT = "GPU use"


def kernels(facts: AttestFacts) -> list[Finding]:
    return [*_jit(facts), *_cpu(facts), *_gpu_use(facts), *_fallbacks(facts), *_table(facts)]


# ---------------------------------------------------------------------------------------------------
# PTX compiled by the driver during the window


def _jit(facts: AttestFacts) -> list[Finding]:
    folder = facts.jit_folder or next((r.jit_folder for r in facts.records if r.jit_folder), None)
    if folder is None:
        return [
            _finding(
                status=Status.SKIP,
                summary="the workload had no private CUDA JIT cache (CUDA_CACHE_PATH): JIT not observed",
                subject=JIT_SUBJECT,
            )
        ]
    files = facts.jit_files if facts.jit_files is not None else max((r.jit_files or 0) for r in facts.records)
    size = facts.jit_bytes if facts.jit_bytes is not None else max((r.jit_bytes or 0) for r in facts.records)
    if not files:
        return [
            _finding(
                status=Status.PASS,
                summary="no kernel was JIT-compiled from PTX: the private CUDA JIT cache stayed empty",
                subject=JIT_SUBJECT,
                evidence=(f"CUDA_CACHE_PATH={folder}",),
            )
        ]
    caps = {r.capability for r in facts.records if r.capability}
    culprits = _ptx_only(facts, caps)
    generated = sorted(
        {
            f.name
            for r in facts.kernels
            if (f := family(r.name, facts.defined_in.get(r.name, ()))) and f.runtime_compiled
        }
    )
    data = kernel_paths().jit
    if culprits:
        which = f"PTX only for this GPU in {', '.join(c.rsplit('/', 1)[-1] for c, _ in culprits)}"
    elif generated:
        which = f"the kernels {', '.join(generated)} generates at run time (compiled from PTX by design)"
    else:
        which = (
            "no loaded library read here has only PTX for this GPU (PTX made at run time, or a process "
            "without a record)"
        )
    status = Status.FAIL if size >= data.fail_bytes else Status.WARN
    if generated and not culprits and status is Status.WARN:
        status = Status.INFO
    return [
        _finding(
            status=status,
            summary=f"the driver JIT-compiled PTX during the window: {files} file(s), {size / 1024:,.1f} KiB "
            f"in the private cache; {which}",
            subject=JIT_SUBJECT,
            evidence=(
                f"CUDA_CACHE_PATH={folder}",
                *(f"{path}: {why}" for path, why in culprits),
                f"capability: {', '.join(f'{a}.{b}' for a, b in sorted(caps)) or 'not recorded'}",
                data.source,
            ),
            fix="rebuild the library with machine code for this GPU "
            "(nvcc -gencode arch=compute_XY,code=sm_XY), "
            "or keep the JIT cache between starts (CUDA_CACHE_PATH on a volume, CUDA_CACHE_MAXSIZE large)"
            if culprits or status is not Status.INFO
            else "keep the JIT cache between starts (CUDA_CACHE_PATH on a volume) so each start does not "
            "compile them again",
        )
    ]


def _ptx_only(facts: AttestFacts, caps: set[tuple[int, int]]) -> list[tuple[str, str]]:
    """The loaded libraries with only PTX for this GPU that may have run a kernel in the window: one whose
    GPU code defines a kernel that ran (symbol tables), or one whose kernel names could not all be read
    while a kernel that ran is neither defined by a library read here nor named by a family's pattern. A
    PTX-only library none of whose kernels ran compiled nothing."""

    ran_in = {p for paths in facts.defined_in.values() for p in paths}
    read_whole = {s.path for s in facts.symbol_reads if s.complete}
    stray = any(
        r.name not in facts.defined_in and family(r.name) is None for r in facts.kernels
    )  # a kernel nobody is known to define
    out = []
    for lib in facts.library_code:
        if lib.path not in ran_in and (lib.path in read_whole or not stray):
            continue
        for cap in sorted(caps):
            cov = judge(lib.targets, cap, lib.complete, lib.payload)
            if cov.jit and not cov.native:
                out.append((lib.path, cov.reason))
                break
    return out


# ---------------------------------------------------------------------------------------------------
# GPU operators that ran on the CPU


def _cpu(facts: AttestFacts) -> list[Finding]:
    data = kernel_paths().cpu
    gpu = [r for r in facts.records if r.torch_cuda and r.finished]
    if not gpu:
        cpu_only = [r for r in facts.records if r.torch and not r.torch_cuda]
        summary = (
            f"torch {cpu_only[0].torch} is a CPU-only build: every operator ran on the CPU"
            if cpu_only
            else "no finished window of a CUDA build of torch: operators' devices not seen"
        )
        return [
            _finding(status=Status.INFO if cpu_only else Status.SKIP, summary=summary, subject=CPU_SUBJECT)
        ]
    window_ns = sum((r.window_s or 0.0) for r in gpu) * 1e9
    ops: dict[str, list[int]] = {}
    for r in gpu:
        for op in r.cpu_ops:
            if data.operators.search(op.name):
                got = ops.setdefault(op.name, [0, 0])
                got[0] += op.count
                got[1] += op.ns
    if not ops:
        return [
            _finding(
                status=Status.PASS,
                summary="no GPU operator ran on the CPU in the window",
                subject=CPU_SUBJECT,
                evidence=(f"operators judged: {data.operators.pattern}",),
            )
        ]
    no_kernels = not any(r.kernels for r in gpu)
    out = []
    for name, (count, ns) in sorted(ops.items(), key=lambda kv: -kv[1][1]):
        share = ns / window_ns if window_ns else 0.0
        out.append(
            _finding(
                status=Status.FAIL if share >= data.fail_share else Status.INFO,
                summary=f"{name} ran on the CPU {count:,} times: {ms(ns)}, {percent(ns, window_ns)} of the "
                f"{window_ns / 1e9:.1f} s window"
                + (
                    "; no GPU kernel ran at all"
                    if no_kernels
                    else ", while the rest of the model ran on the GPU"
                ),
                subject=name,
                evidence=(f"launched nothing on the GPU while the process used CUDA ({data.source})",),
                fix="move its module and inputs to the GPU (.to('cuda')): a layer left out of "
                "model.to(device), "
                "or a tensor made on the CPU in forward()",
            )
        )
    return out


# ---------------------------------------------------------------------------------------------------
# Whether the workload's processes used the GPU at all (NVML, from beside it: any engine, torch or not)


def _gpu_use(facts: AttestFacts) -> list[Finding]:
    out = []
    for u in facts.gpu_use:
        seen = f"{u.samples} NVML sample(s) over {u.span_s:.1f} s"
        evidence = (
            u.path,
            f"other processes NVML listed on the GPU at once: up to {u.others}",
            f"the GPU's utilisation: up to {u.gpu_util_max} %" if u.gpu_util_max is not None else "",
        )
        evidence = tuple(e for e in evidence if e)
        if u.error:
            out.append(
                _use(Status.SKIP, f"NVML could not be read ({u.error}): the workload's GPU use not seen")
            )
        elif not u.samples:
            out.append(_use(Status.SKIP, "no NVML sample was taken: the workload ended at once"))
        elif u.on_gpu or u.peak_mib:
            sm = f", SM busy up to {u.max_sm} % of a sample" if u.max_sm is not None else ""
            out.append(
                _use(
                    Status.PASS,
                    f"the workload used the GPU: {len(u.on_gpu)} process(es), up to {u.peak_mib:,} MiB of "
                    f"GPU memory{sm} ({seen})",
                    evidence,
                )
            )
        elif not u.host_pids and u.others:
            out.append(
                _use(
                    Status.SKIP,
                    f"NVML lists {u.others} process(es) on the GPU by the host's process IDs, which this PID "
                    "namespace cannot match to the workload's: GPU use not judged",
                    evidence,
                    "run the container with --pid=host to have the workload's GPU use judged",
                )
            )
        else:
            cpu_torch = [r.torch for r in facts.records if r.torch and not r.torch_cuda]
            why = f"; its torch {cpu_torch[0]} is a CPU-only build" if cpu_torch else ""
            out.append(
                _use(
                    Status.WARN,
                    f"the workload held no GPU memory and ran nothing on the GPU in the window ({seen}): it "
                    f"ran on the CPU{why}",
                    evidence,
                    "check that the engine's GPU backend is there and chosen: a build without CUDA (a CPU "
                    "wheel, an image whose GPU backend was not compiled in), CUDA_VISIBLE_DEVICES empty, or "
                    "a device option left at cpu; a window that ended before the model reached the GPU "
                    "(--seconds) says the same",
                )
            )
    return out


def _use(status: Status, summary: str, evidence: tuple[str, ...] = (), fix: str | None = None) -> Finding:
    return _finding(status=status, summary=summary, subject=USE_SUBJECT, evidence=evidence, fix=fix)


# ---------------------------------------------------------------------------------------------------
# A hot op served by a fallback family where the data says a faster one exists for this GPU


def _fallbacks(facts: AttestFacts) -> list[Finding]:
    rows = facts.kernels
    total = sum(r.gpu_ns for r in rows)
    if not total:
        return []
    cap = capability(facts.records)
    data = kernel_paths().fallback
    judged = [p for p in data.path if p.gotcha == "G7"]
    out = []
    for slow in slower_paths(rows, cap, "G7", facts.defined_in):
        if not slow.hot:
            continue
        p = slow.path
        evidence = (
            *(f"{n[:160]}; {_from(n, facts.defined_in)}" for n in slow.kernels[:5]),
            f"why it happens: {p.why}",
            p.source,
        )
        ran = f"{p.op} ran on {' / '.join(p.slow)}: {percent(slow.gpu_ns, total)} of the window's GPU time"
        if slow.faster_here:
            out.append(
                _finding(
                    status=Status.WARN,
                    summary=f"{ran}, a fallback while {', '.join(p.faster)} exist for SM {cap[0]}.{cap[1]}",  # type: ignore[index]
                    subject=f"fallback {p.op}",
                    evidence=evidence,
                    fix=p.fix,
                )
            )
        else:
            where = f"SM {cap[0]}.{cap[1]}" if cap else "a GPU the record does not name"
            out.append(
                _finding(
                    status=Status.INFO,
                    summary=f"{ran}; the data names no faster family for {where}",
                    subject=f"fallback {p.op}",
                    evidence=evidence,
                )
            )
    if out:
        return out
    share = f"{data.hot_share:.0%}".replace("%", " %")
    return [
        _finding(
            status=Status.PASS,
            summary=f"no hot op (≥ {share} of GPU time) ran a fallback family: "
            + "; ".join(f"{p.op} ({' / '.join(p.slow)})" for p in judged),
            subject="fallback paths",
            evidence=tuple(p.source for p in judged),
        )
    ]


# ---------------------------------------------------------------------------------------------------
# GPU time per family and library


def _table(facts: AttestFacts) -> list[Finding]:
    rows = facts.kernels
    total = sum(r.gpu_ns for r in rows)
    cut = [r for r in facts.records if not r.finished]
    if not rows:
        return [_cut(cut)] if cut else []
    defined = facts.defined_in
    shares = families(rows, defined)
    counted = sum(s.gpu_ns for s in shares)
    by_family: dict[str, list[KernelRow]] = {}
    for r in sorted(rows, key=lambda r: -r.gpu_ns):
        by_family.setdefault(_family_name(r.name, defined), []).append(r)
    probe_total = sum(r.device_ns or 0 for r in facts.records if r.finished)
    out = [
        _finding(
            status=Status.INFO,
            summary=f"{s.name} ({s.library}): {percent(s.gpu_ns, total)} of GPU time, {ms(s.gpu_ns)}, "
            f"{s.kernels} kernel(s), {s.launches:,} launches",
            subject=f"family {s.name}",
            evidence=tuple(
                f"{r.name[:160]}: {r.count:,} × {ms(r.gpu_ns)}; {_from(r.name, defined)}"
                for r in by_family.get(s.name, ())[:5]
            ),
        )
        for s in shares
    ]
    windows = [r for r in facts.records if r.finished]
    cost = max((r.read_s or 0.0) for r in windows) if windows else 0.0
    summary = (
        f"{len({r.name for r in rows})} kernels, {sum(r.count for r in rows):,} launches, {ms(total)} of GPU "
        f"time in {len(facts.records)} process(es); the families' shares add up to "
        f"{percent(counted, probe_total or counted)} of the profiler's total; by library: "
        + ", ".join(f"{s.name} {percent(s.gpu_ns, total)} (by {s.how})" for s in libraries(rows, defined))
    )
    evidence = (
        *(
            f"pid {r.pid}: window {r.window_s or 0:.1f} s ended by {r.reason}, read in {r.read_s or 0:.2f} s"
            for r in windows
        ),
        *_attribution(facts),
    )
    if cut:
        out.append(_cut(cut, summary, evidence))
    else:
        out.append(
            _finding(
                status=Status.PASS,
                summary=summary
                + (f"; the window cost the workload {cost:.2f} s after it ended" if cost else ""),
                subject=TIME_SUBJECT,
                evidence=evidence,
            )
        )
    return out


def _family_name(kernel: str, defined: Defined) -> str:
    fam = family(kernel, defined.get(kernel, ()))
    return fam.name if fam else OTHER


def _from(kernel: str, defined: Defined) -> str:
    lib, how = library(kernel, defined)
    return f"from {lib} (by {how})"


def _attribution(facts: AttestFacts) -> tuple[str, ...]:
    """How the kernels were attributed: by the symbol tables of the loaded libraries' GPU code, else by
    their names (data/kernel_paths.toml), and which libraries' code could not be read whole."""
    by: dict[str, list[int]] = {}
    total = 0
    for r in facts.kernels:
        _lib, how = library(r.name, facts.defined_in)
        got = by.setdefault(how, [0, 0])
        got[0] += 1
        got[1] += r.gpu_ns
        total += r.gpu_ns
    out = [
        "kernels attributed to libraries: "
        + "; ".join(
            f"by {how}: {n} ({percent(ns, total)} of GPU time)" for how, (n, ns) in sorted(by.items())
        )
    ]
    read = [s for s in facts.symbol_reads if s.kernels or not s.complete]
    out += [
        f"{s.path}: {s.kernels} kernel name(s) read from its GPU code"
        + ("" if s.complete else f", not all ({s.problem}): its other kernels go by name pattern")
        for s in read[:8]
    ]
    if len(read) > 8:
        out.append(f"… and {len(read) - 8} more libraries with GPU code")
    return tuple(out)


def _cut(cut: list[ProcessRecord], summary: str = "", evidence: tuple[str, ...] = ()) -> Finding:
    which = ", ".join(f"pid {r.pid} (last seen at +{r.window_s or 0:.1f} s)" for r in cut)
    return _finding(
        status=Status.WARN,
        summary=f"the window did not end in {which}: the process ended or was killed before the profiler "
        f"stopped, so its record is partial" + (f"; {summary}" if summary else ""),
        subject=TIME_SUBJECT,
        evidence=evidence,
        fix="give the workload a window it outlives (--seconds, --steps)",
    )

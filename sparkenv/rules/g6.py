"""G6 live: other GPU-resident processes and inference servers, and whether they are capped.
G6 watch: over a run — a GPU process that appears beside the workload, and another process's memory
growing into the shared pool."""

from __future__ import annotations

from functools import partial
from typing import TYPE_CHECKING

from sparkenv.core.report import Finding, GotchaId, Status
from sparkenv.environment import parsers
from sparkenv.environment.servers import identify
from sparkenv.knowledge import gate
from sparkenv.knowledge import watch as limits
from sparkenv.rules import Rule, Stage

if TYPE_CHECKING:
    from sparkenv.facts.live import GateFacts
    from sparkenv.facts.timeseries import GpuProcess, Series
    from sparkenv.knowledge.records.gate import ServerCaps
    from sparkenv.knowledge.records.servers import Server

_finding = partial(Finding, GotchaId.G6)  # every finding of this module is G6's


def live(f: GateFacts) -> list[Finding]:
    out: list[Finding] = []
    limits = gate().servers
    seen: set[int] = set()
    for proc in (f.section("processes") or {}).get("servers", []):
        server = identify(proc["argv"])
        if server:
            seen.add(proc["pid"])
            out.append(_server(f"pid {proc['pid']}", server, proc["argv"], limits, f.is_gb10))
    if f.workload:
        server = identify(f.workload)
        if server:
            out.append(_server("the workload", server, f.workload, limits, f.is_gb10))
    out += _gpu_processes(f, seen, limits)
    out += _ray(f)
    if not out:
        err = f.error_finding(GotchaId.G6, "processes", "gpu processes")
        if err:
            return [err]
        out.append(_finding(status=Status.PASS, summary=_nothing_seen(f), subject="gpu processes"))
    return out


def _nothing_seen(f: GateFacts) -> str:
    readings = f.gpu_readings
    if readings.get("available") and "apps" in readings and not readings.get("apps_error"):
        whole = " (NVML lists the whole GPU, other containers included)" if _in_container(f) else ""
        return f"no other GPU-resident process or inference server{whole}"
    why = readings.get("apps_error") or readings.get("error") or f.probe_error(f.gpu_probe) or "no GPU list"
    return (
        f"no inference server among this machine's visible processes; the GPU's own process list is "
        f"unavailable ({why}), so processes of other containers are not seen"
    )


def _in_container(f: GateFacts) -> bool:
    return bool((f.section("container") or {}).get("markers"))


def _gpu_processes(f: GateFacts, seen: set[int], limits: ServerCaps) -> list[Finding]:
    """Every process NVML lists, with its memory, judged against the GPU's total, or on a GPU that
    reports none (GB10: unified memory) against MemTotal."""
    total, of, warn_at = _memory_total(f, limits)
    out: list[Finding] = []
    listed = 0.0
    for app in f.gpu_readings.get("apps") or []:
        if app.get("pid") in seen:
            continue
        used = app.get("used_gpu_memory", app.get("used_memory"))
        if isinstance(used, (int, float)):
            listed += used
        out.append(_gpu_process(app, used, total, of, warn_at))
    used_total = (f.gpu0 or {}).get("memory.used")
    unlisted = used_total - listed if isinstance(used_total, (int, float)) else 0
    if unlisted > gate().unified_memory.unaccounted_info_mib:
        out.append(
            _finding(
                status=Status.INFO,
                summary=f"{unlisted:.0f} MiB of GPU memory is in use beyond what the listed processes hold: "
                "processes this container cannot see (other containers, the host) or driver reservations",
                subject="unlisted gpu memory",
            )
        )
    return out


def _memory_total(f: GateFacts, limits: ServerCaps) -> tuple[float | None, str, float]:
    """(MiB a process's share is taken of, the words for it, the share that warns): the GPU's memory, or
    on a GPU that reports none (GB10: unified memory) MemTotal, with its own threshold."""
    gpu_total = (f.gpu0 or {}).get("memory.total")
    if isinstance(gpu_total, (int, float)) and gpu_total:
        return gpu_total, "of the GPU", limits.safe_fraction
    mem_total_kb = (f.section("meminfo") or {}).get("MemTotal")
    if isinstance(mem_total_kb, int) and mem_total_kb:
        return (
            mem_total_kb / 1024,
            "of unified memory (MemTotal)",
            gate().unified_memory.other_processes_warn_fraction,
        )
    return None, "", limits.safe_fraction


def _gpu_process(app: dict, used: object, total: float | None, of: str, warn_at: float) -> Finding:
    pid = app.get("pid")
    share = used / total if isinstance(used, (int, float)) and total else None
    held = f"{used:.0f} MiB" if isinstance(used, (int, float)) else "an unknown amount"
    if app.get("process_name"):
        who = f"{app['process_name']} (pid {pid})"
    elif app.get("host_pid_visible") is False:
        who = f"host pid {pid} (another container's or the host's process: its name is not visible here)"
    else:
        who = f"pid {pid} (name unknown)"
    text = f"{who} holds {held} of GPU memory"
    if share is not None and share > warn_at:
        return _finding(
            status=Status.WARN,
            summary=f"{text} ({share:.0%} {of})",
            subject=f"pid {pid}",
            fix="stop or cap it before a large job: unified memory is one pool",
        )
    return _finding(
        status=Status.INFO, summary=text + (f" ({share:.0%} {of})" if share else ""), subject=f"pid {pid}"
    )


def _ray(f: GateFacts) -> list[Finding]:
    """On unified memory the GPU's allocations are node memory to Ray's memory monitor."""
    spec = gate().ray
    env = f.env
    by_env = [k for k in spec.signals_env if k in env]
    by_workload = any(w in f.workload for w in spec.workload_words) or any(
        a.endswith("/ray") or a == "ray" for a in f.workload[:3]
    )
    if not f.is_gb10 or not (by_env or by_workload):
        return []
    if env.get("RAY_memory_monitor_refresh_ms", "").strip() == "0":
        return [
            _finding(
                status=Status.INFO,
                summary="Ray's memory monitor is off (RAY_memory_monitor_refresh_ms=0)",
                subject="ray",
            )
        ]
    threshold = env.get("RAY_memory_usage_threshold") or f"{spec.default_threshold:g} (default)"
    return [
        _finding(
            status=Status.WARN,
            summary="Ray on unified memory: its memory monitor counts GPU allocations as node memory and "
            f"kills workers past RAY_memory_usage_threshold {threshold}",
            subject="ray",
            evidence=(f"seen through {', '.join(by_env) or 'the workload arguments'}", spec.source),
            fix="size the model for MemTotal x threshold, or raise RAY_memory_usage_threshold; "
            "RAY_memory_monitor_refresh_ms=0 turns the monitor off (then the kernel OOM killer decides)",
        )
    ]


def _server(who: str, server: Server, argv: list[str], limits: ServerCaps, gb10: bool) -> Finding:
    name = server.name
    subject = f"{who} ({name})" if who.startswith("pid") else "workload"
    cap_args = server.cap_args
    raw = parsers.option_value(argv, cap_args) if cap_args else None
    if not cap_args:
        return _finding(
            status=Status.WARN,
            summary=f"{name} server ({who}) has no memory cap to read: it can grow into the unified pool",
            subject=subject,
            evidence=(" ".join(argv)[:300],),
            fix="stop it before a large job, or limit its model/context size",
        )
    try:
        # a server with cap_args has a default_fraction: the loader checks it
        fraction = float(raw) if raw is not None else float(server.default_fraction)  # type: ignore[arg-type]
    except ValueError:
        return _finding(
            status=Status.WARN,
            summary=f"{name} ({who}): cannot read {cap_args[0]}={raw!r}",
            subject=subject,
            fix=f"give {cap_args[0]} a fraction of the GPU's memory, at most {limits.safe_fraction:g} "
            "to leave room for a job beside it, and restart the server",
        )
    how = f"{cap_args[0]} {raw}" if raw is not None else f"no {cap_args[0]} (default {fraction:g})"
    if fraction <= limits.safe_fraction:
        return _finding(
            status=Status.PASS,
            summary=f"{name} ({who}) capped at {how}: a small job can run beside it",
            subject=subject,
        )
    extra = ""
    if gb10 and name == "vLLM" and fraction > limits.vllm_ceiling:
        extra = f"; above {limits.vllm_ceiling:g} its start-up profiling can wedge a GB10 (vllm#46307)"
    return _finding(
        status=Status.WARN,
        summary=f"{name} ({who}) is near capacity with {how}{extra}",
        subject=subject,
        evidence=(" ".join(argv)[:300],),
        fix=f"cap it at {cap_args[0]} {limits.safe_fraction:g} to share the GPU, or run one big job at a "
        "time",
    )


# --- Stage.WATCH: readings over a run (sparkenv gate --watch, sparkenv watch) -------------------------


def watch(s: Series) -> list[Finding]:
    """Every process NVML listed at some reading but not at the first, that is not the workload's; and
    every other process whose memory grew past the threshold since it was first seen."""

    if not s.samples:
        return [_finding(status=Status.SKIP, summary="no readings", subject="gpu processes")]
    growth_warn = limits().processes.growth_warn_mib
    first, peak = _first_seen(s)
    before = {a.pid for a in s.samples[0].apps}
    new = [pid for pid in first if pid not in before]
    assumed = None
    if not s.pids_local and new:
        # NVML's PIDs are the host's here: the workload cannot be told apart, so the first process
        # to appear is taken for it.
        assumed, new = new[0], new[1:]
    evidence = ("taken for the workload: the first process to appear (PIDs are the host's here)",)
    out = []
    for pid, seen in first.items():
        notes = _process_notes(s, pid, seen, pid in new, peak.get(pid), growth_warn)
        if notes:
            out.append(
                _finding(
                    status=Status.WARN,
                    summary="; ".join(notes),
                    subject=f"gpu process {pid}",
                    evidence=evidence if assumed is not None else (),
                    fix="unified memory is one pool: stop it, or cap it, before it squeezes the run",
                )
            )
    if not out:
        out.append(
            _finding(
                status=Status.PASS,
                summary=f"no other GPU process appeared or grew over {s.duration:.0f} s",
                subject="gpu processes",
            )
        )
    return out


def _first_seen(s: Series) -> tuple[dict[int, tuple[float, GpuProcess]], dict[int, int]]:
    """For every process not the workload's: when it was first seen (and as what), and its peak memory."""
    first: dict[int, tuple[float, GpuProcess]] = {}
    peak: dict[int, int] = {}
    for smp in s.samples:
        for a in smp.apps:
            if a.own:
                continue
            first.setdefault(a.pid, (smp.t, a))
            if a.used_mib is not None:
                peak[a.pid] = max(peak.get(a.pid, 0), a.used_mib)
    return first, peak


def _process_notes(
    s: Series, pid: int, seen: tuple[float, GpuProcess], new: bool, peak: int | None, growth_warn: int
) -> list[str]:
    """What one process did over the run: appeared (an inference server: is it capped), or grew."""
    from sparkenv.facts.timeseries import clock

    t, a = seen
    start = a.used_mib or 0
    grew = (start if peak is None else peak) - start
    who = f"{a.name} (pid {pid})" if a.name else f"pid {pid}"
    notes = []
    if new:
        notes.append(f"a new GPU process {who} appeared at {clock(t)} holding {_mib(a.used_mib)}")
        server = identify(list(a.argv)) if a.argv else None
        if server:
            capped = _server(f"pid {pid}", server, list(a.argv), gate().servers, s.gb10)
            notes.append(capped.summary)
    if grew >= growth_warn:
        notes.append(f"{who}'s GPU memory grew {grew} MiB since {clock(t)} (to {peak} MiB)")
    return notes


def _mib(value: int | None) -> str:
    return f"{value} MiB" if value is not None else "an unknown amount of memory"


RULES = (
    Rule(
        Stage.LIVE,
        live,
        "every GPU process NVML lists (the whole GPU, other containers included) with its memory, on "
        "GB10 judged against MemTotal; inference servers (/proc command lines, data/servers.toml) and "
        "whether their memory is capped; Ray's memory monitor on unified memory",
    ),
    Rule(
        Stage.WATCH,
        watch,
        "NVML's compute processes every few seconds over the run: one that appears beside the workload "
        "(an inference server: is it capped), another's memory growing into the pool (data/watch.toml)",
    ),
)

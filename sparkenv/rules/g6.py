"""G6 live: other GPU-resident processes and inference servers, and whether they are capped."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from sparkenv import datafiles
from sparkenv.gate import parsers
from sparkenv.gate.servers import identify
from sparkenv.report import Finding, Status
from sparkenv.rules import Rule, Stage

if TYPE_CHECKING:
    from sparkenv.gate.view import GateFacts


def live(f: GateFacts) -> list[Finding]:
    out: list[Finding] = []
    limits = datafiles.load("gate")["servers"]
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
    apps = (f.section("smi") or {}).get("apps") or []
    total = (f.gpu0 or {}).get("memory.total")
    for app in apps:
        pid = app.get("pid")
        if pid in seen:
            continue
        used = app.get("used_gpu_memory") or app.get("used_memory")
        share = (
            used / total
            if isinstance(used, (int, float)) and isinstance(total, (int, float)) and total
            else None
        )
        held = f"{used} MiB" if used is not None else "an unknown amount"
        text = f"{app.get('process_name')} (pid {pid}) holds {held} of GPU memory"
        if share is not None and share > limits["safe_fraction"]:
            out.append(
                Finding(
                    "G6",
                    Status.WARN,
                    f"{text} ({share:.0%} of the GPU)",
                    f"pid {pid}",
                    (),
                    "stop or cap it before a large job: unified memory is one pool",
                )
            )
        else:
            out.append(Finding("G6", Status.INFO, text, f"pid {pid}"))
    if not out:
        err = f.error_finding("G6", "processes", "gpu processes")
        if err:
            return [err]
        out.append(
            Finding("G6", Status.PASS, "no other GPU-resident process or inference server", "gpu processes")
        )
    return out


def _server(who: str, server: dict[str, Any], argv: list[str], limits: dict[str, Any], gb10: bool) -> Finding:
    name = server["name"]
    subject = f"{who} ({name})" if who.startswith("pid") else "workload"
    cap_args = tuple(server.get("cap_args") or ())
    raw = parsers.option_value(argv, cap_args) if cap_args else None
    if not cap_args:
        return Finding(
            "G6",
            Status.WARN,
            f"{name} server ({who}) has no memory cap to read: it can grow into the unified pool",
            subject,
            (" ".join(argv)[:300],),
            "stop it before a large job, or limit its model/context size",
        )
    try:
        fraction = float(raw) if raw is not None else float(server["default_fraction"])
    except ValueError:
        return Finding("G6", Status.WARN, f"{name} ({who}): cannot read {cap_args[0]}={raw!r}", subject)
    how = f"{cap_args[0]} {raw}" if raw is not None else f"no {cap_args[0]} (default {fraction:g})"
    if fraction <= limits["safe_fraction"]:
        return Finding(
            "G6", Status.PASS, f"{name} ({who}) capped at {how}: a small job can run beside it", subject
        )
    extra = ""
    if gb10 and name == "vLLM" and fraction > limits["vllm_ceiling"]:
        extra = f"; above {limits['vllm_ceiling']:g} its start-up profiling can wedge a GB10 (vllm#46307)"
    return Finding(
        "G6",
        Status.WARN,
        f"{name} ({who}) is near capacity with {how}{extra}",
        subject,
        (" ".join(argv)[:300],),
        f"cap it at {cap_args[0]} {limits['safe_fraction']:g} to share the GPU, or run one big job at a time",
    )


RULES = (
    Rule(
        Stage.LIVE,
        live,
        "other GPU-resident processes and inference servers (/proc command lines, "
        "data/servers.toml) and whether their memory is capped",
    ),
)

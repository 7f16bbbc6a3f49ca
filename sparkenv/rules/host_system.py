"""The Spark's own system at the host stage (`sparkenv host`): the NVIDIA driver and its kernel module's
flavour, the kernel and DGX OS against the dated known-issues list (data/hosts.toml, judged by
rules/hosts.py, the same function the gate calls), the contiguous memory area, the CPU frequency
policy under load, and what stops a unified-memory over-allocation from hanging the machine. Pure
functions of HostFacts; each returns one finding per subject.

A known issue speaks for the reading it explains: where one matches, the reading's own rule says
nothing more about it (one line per problem)."""

from __future__ import annotations

import re
from typing import TYPE_CHECKING

from sparkenv.core.report import Finding, GotchaId, Status
from sparkenv.knowledge import hosts as host_data
from sparkenv.knowledge.known import newer_than_known
from sparkenv.rules import hosts

if TYPE_CHECKING:
    from sparkenv.facts.host import HostFacts


def _known(f: HostFacts, gid: GotchaId) -> list[Finding]:
    found = hosts.judge(
        f.kernel,
        f.section("meminfo"),
        f.driver_version,
        None,
        False,
        module=f.module_flavour,
        spark=f.is_spark,
    )
    return [x for x in found if x.id == gid]


def _module_issue(f: HostFacts) -> bool:
    """Whether a known issue about the kernel module's flavour matches (known_issues says it)."""
    found = hosts.matching(
        f.kernel, f.section("meminfo"), f.driver_version, None, module=f.module_flavour, spark=f.is_spark
    )
    return any(issue.module for issue in found)


def _numbers(text: str | None) -> tuple[int, ...]:
    """A kernel or driver version's numbers in order, to tell older from newer ("7.0.0-1019-nvidia" ->
    (7, 0, 0, 1019))."""
    return tuple(int(n) for n in re.findall(r"\d+", text or ""))


def _machine(f: HostFacts) -> str:
    parts = [f"kernel {f.kernel or '?'}"]
    if f.dgx_os:
        parts.append(f"DGX OS {f.dgx_os}")
    if f.os_name:
        parts.append(f.os_name)
    return ", ".join(parts)


# --- G1: the driver and the known host issues that lose the GPU ------------------------------------


def driver(f: HostFacts) -> list[Finding]:
    """The NVIDIA kernel module: loaded, its version and flavour, and whether NVML reaches the GPU."""
    subject = "nvidia-driver"
    gid = GotchaId.G1
    if not f.driver_version:
        why = f"no NVIDIA kernel module loaded ({f.driver_missing_why})"
        if f.is_spark:
            return [
                Finding(
                    gid,
                    Status.FAIL,
                    f"{why}: this Spark's GPU is not usable",
                    subject,
                    (_machine(f),),
                    "sudo modprobe nvidia; then read `sudo dmesg | grep NVRM` for why it did not load",
                )
            ]
        return [Finding(gid, Status.SKIP, f"{why}: the GPU checks do not apply on this machine", subject)]
    flavour = f.module_flavour
    if _module_issue(f):
        return []  # the known issue about this module's flavour is the line (known_issues)
    drv = f.section("driver") or {}
    evidence = tuple(str(x) for x in (drv.get("proc_version"), f"taint: {drv.get('taint')}") if x)
    label = f"driver {f.driver_version}, {flavour or 'unknown-flavour'} kernel module"
    nvml = f.nvml_error
    if nvml is not None and f.gpu_probe in f.raw:
        return [
            Finding(
                gid,
                Status.WARN if not f.is_spark else Status.FAIL,
                f"{label} is loaded, but NVML finds no GPU: {nvml}",
                subject,
                evidence,
                "sudo dmesg | grep -E 'NVRM|Xid' shows why the GPU did not initialize",
            )
        ]
    gpus = f.gpu_readings.get("gpus") or []
    names = ", ".join(str(g.get("name")) for g in gpus if g.get("name"))
    return [
        Finding(gid, Status.PASS, f"{label}" + (f"; NVML sees {names}" if names else ""), subject, evidence)
    ]


def known_issues(f: HostFacts) -> list[Finding]:
    """The kernel, the driver and its module's flavour against data/hosts.toml's G1 entries."""
    found = _known(f, GotchaId.G1)
    if found:
        return found
    return [
        Finding(
            GotchaId.G1,
            Status.PASS,
            f"{_machine(f)}: no known host issue (data/hosts.toml, reviewed {hosts.reviewed()})",
            "host:known-issues",
        )
    ]


def dgx_os_release(f: HostFacts) -> list[Finding]:
    """The DGX OS release (/etc/dgx-release) against data/hosts.toml [[dgx_os]]: the kernel and driver it
    ships against the running ones; a release past the newest row is newer_than_known's."""
    subject = "host:dgx-os"
    gid = GotchaId.G1
    version = f.dgx_os_version
    if version is None:
        said = f"/etc/dgx-release names no release ({f.dgx_os})" if f.dgx_os else "no /etc/dgx-release"
        return [Finding(gid, Status.SKIP, f"{said}: not DGX OS, no release to compare", subject)]
    data = host_data()
    row = next((r for r in data.dgx_os if r.version == version), None)
    if row is None:
        unknown = newer_than_known("dgx_os", version)
        if unknown is not None:
            return [
                Finding(
                    gid,
                    Status.INFO,
                    unknown.summary(),
                    subject,
                    (f"this machine: {_machine(f)}, driver {f.driver_version or '?'}",),
                    unknown.refresh,
                )
            ]
        known = ", ".join(r.version for r in data.dgx_os)
        return [
            Finding(
                gid,
                Status.SKIP,
                f"DGX OS {version} is not in data/hosts.toml [[dgx_os]] (it records {known}): its kernel "
                "and driver are not compared",
                subject,
            )
        ]
    ships = {"kernel": row.kernel, "driver": row.driver}
    runs = {"kernel": f.kernel, "driver": f.driver_version}
    checked = [k for k in ships if k not in row.unverified and ships[k] and runs[k]]
    differs = [k for k in checked if ships[k] != runs[k]]
    unverified = [f"{k} {ships[k]} UNVERIFIED (no public source)" for k in ships if k in row.unverified]
    evidence = tuple(dict.fromkeys(s for s in (row.source, row.kernel_source) if s)) + tuple(unverified)
    if differs:
        shipped = " and ".join(f"{k} {ships[k]}" for k in differs)
        older = [k for k in differs if _numbers(runs[k]) < _numbers(ships[k])]
        running = " and ".join(f"{k} {runs[k]} ({'older' if k in older else 'newer'})" for k in differs)
        why = (
            "a partial update: the release's packages are not all installed, or the machine booted an "
            "older kernel"
            if older
            else "packages newer than the release ships"
        )
        return [
            Finding(
                gid,
                Status.INFO,
                f"DGX OS {version} ships {shipped}; this machine runs {running}: {why}",
                subject,
                evidence,
                "sudo apt update && sudo apt full-upgrade, then reboot" if older else None,
            )
        ]
    said = ", ".join(f"{k} {ships[k]}" for k in checked) or "nothing compared"
    return [
        Finding(
            gid,
            Status.PASS,
            f"DGX OS {version} ({row.date}): {said} as it ships"
            + (f"; {'; '.join(unverified)}" if unverified else ""),
            subject,
            evidence,
        )
    ]


def not_in_snapshot(gid: GotchaId, subject: str) -> Finding:
    """The SKIP of a host check replayed from a gate's snapshot, which holds no host set-up facts."""
    return Finding(
        gid, Status.SKIP, "not in this snapshot (taken by the gate, not by sparkenv host)", subject
    )


# --- G3: what stops an over-allocation from hanging the machine ------------------------------------


def memory_protection(f: HostFacts) -> list[Finding]:
    """earlyoom or systemd-oomd running; swap said beside it."""
    subject = "host:oom-protection"
    gid = GotchaId.G3
    oom = f.part("oom")
    if oom is None:
        return [not_in_snapshot(gid, subject)]
    meminfo = f.section("meminfo") or {}
    swap = meminfo.get("SwapTotal")
    evidence = (f"swap: {swap / (1 << 20):.1f} GiB" if swap is not None else "swap: not read",)
    running = [name for name, up in sorted(oom.items()) if up]
    if running:
        return [
            Finding(
                gid,
                Status.PASS,
                f"{', '.join(running)} runs: an over-allocation is killed",
                subject,
                evidence,
            )
        ]
    checks = host_data().checks
    return [
        Finding(
            gid,
            Status.WARN,
            "neither earlyoom nor systemd-oomd runs: on unified memory an over-allocation can hang the "
            "whole machine instead of ending in an OOM kill",
            subject,
            (*evidence, checks.oom_source),
            checks.oom_fix,
        )
    ]


# --- G4: the cores' frequency policy, under load ----------------------------------------------------


def cpu_frequency(f: HostFacts) -> list[Finding]:
    """The governor of every core, and the fastest core's frequency while one busy loop runs on it."""
    subject = "host:cpu-frequency"
    gid = GotchaId.G4
    cpu = f.part("cpu")
    if cpu is None:
        return [not_in_snapshot(gid, subject)]
    cores = cpu.get("cores") or []
    if not cores:
        return [
            Finding(
                gid,
                Status.SKIP,
                "no cpufreq in /sys (a VM, or no frequency driver): the cores' frequencies cannot be read",
                subject,
            )
        ]
    checks = host_data().checks
    governors = sorted({str(c.get("governor")) for c in cores})
    driver = sorted({str(c.get("driver")) for c in cores})
    evidence = [f"governor: {', '.join(governors)}", f"driver: {', '.join(driver)}"]
    load = cpu.get("load") or {}
    core = next((c for c in cores if c.get("cpu") == load.get("cpu")), None)
    low = None
    if core and load.get("cur_khz") and core.get("max_khz"):
        mhz, top, bottom = load["cur_khz"] / 1000, core["max_khz"] / 1000, (core.get("min_khz") or 0) / 1000
        evidence.append(
            f"cpu{core['cpu']} with a busy loop on it: {mhz:.0f} MHz (range {bottom:.0f}-{top:.0f} MHz)"
        )
        if load["cur_khz"] < checks.cpu_load_fraction * core["max_khz"]:
            low = f"cpu{core['cpu']} ran at {mhz:.0f} MHz of its {top:.0f} MHz with a busy loop on it"
    elif load.get("error"):
        evidence.append(str(load["error"]))
    if "powersave" in governors:
        return [
            Finding(
                gid,
                Status.WARN,
                "the powersave governor holds cores at their lowest frequency" + (f" ({low})" if low else ""),
                subject,
                tuple(evidence),
                checks.governor_fix,
            )
        ]
    if f.is_spark and cpu.get("auto_sel_mode") == "N":
        return [
            Finding(
                gid,
                Status.WARN,
                "cppc_cpufreq's autonomous mode is off: GB10 memory bandwidth and prompt processing fall far "
                "below stock DGX OS" + (f" ({low})" if low else ""),
                subject,
                (*evidence, checks.cppc_source),
                checks.cppc_fix,
            )
        ]
    if low:
        return [
            Finding(
                gid,
                Status.WARN,
                f"{low}: the cores stay low under load (governor {', '.join(governors)})",
                subject,
                tuple(evidence),
                "update the kernel (sudo apt update && sudo apt full-upgrade, then reboot); "
                f"{checks.governor_fix}",
            )
        ]
    said = "at full speed under load" if load.get("cur_khz") else "(not measured under load)"
    return [
        Finding(gid, Status.PASS, f"governor {', '.join(governors)}; cores {said}", subject, tuple(evidence))
    ]


# --- G10: the contiguous memory area RDMA between two Sparks registers from -------------------------


def cma(f: HostFacts) -> list[Finding]:
    """CmaTotal in /proc/meminfo, and data/hosts.toml's G10 entries (which speak for it where they
    match)."""
    subject = "host:cma"
    gid = GotchaId.G10
    known = _known(f, gid)
    if known:
        return known
    meminfo = f.section("meminfo")
    if meminfo is None:
        return [Finding(gid, Status.ERROR, f"/proc/meminfo not read: {f.probe_error('meminfo')}", subject)]
    value = meminfo.get("CmaTotal")
    if value:
        return [
            Finding(
                gid, Status.PASS, f"CmaTotal: {value} kB (RDMA between Sparks can register memory)", subject
            )
        ]
    seen = "CmaTotal: 0 kB" if value == 0 else "no CmaTotal in /proc/meminfo (a kernel without CMA)"
    if not f.is_spark:
        return [Finding(gid, Status.SKIP, f"{seen}: matters only for RDMA between two Sparks", subject)]
    return [
        Finding(
            gid,
            Status.WARN,
            f"{seen}: RDMA memory registration fails, so NCCL over the ConnectX-7 link between two Sparks "
            "cannot start",
            subject,
            (_machine(f),),
            "boot a DGX OS kernel with CMA (or add cma= to the kernel command line)",
        )
    ]


# --- the registry's entry points: one host rule per gotcha (rules/gN.py RULES) ----------------------


def g1(f: HostFacts) -> list[Finding]:
    return driver(f) + known_issues(f) + dgx_os_release(f)


g3 = memory_protection
g4 = cpu_frequency
g10 = cma

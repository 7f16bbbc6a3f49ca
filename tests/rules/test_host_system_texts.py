"""rules/host_system.py (the Spark's own system at `sparkenv host`): each finding in full where the rows
of test_g_host.py check only its status and a part of its text — the memory protection and the swap
beside it, the cores' frequency with the reading under load, the DGX OS release against the kernel and
driver it ships, the contiguous memory area. Snapshots of real machines (tests/fixtures/host/), changed
where a case says; fixes and sources from data/hosts.toml."""

from __future__ import annotations

from test_g_host import OFF_SPARK, snap

from sparkenv.core.report import Finding, GotchaId, Status
from sparkenv.knowledge import hosts
from sparkenv.rules import host_system

CHECKS = hosts().checks
ROWS = {r.version: r for r in hosts().dgx_os}


def one(findings: list[Finding], gid: GotchaId) -> Finding:
    assert len(findings) == 1, findings
    (f,) = findings
    assert f.id is gid, f
    return f


def test_an_oom_daemon_runs_with_the_swap_said():
    f = one(host_system.memory_protection(snap()), GotchaId.G3)
    assert (f.status, f.subject) == (Status.PASS, "host:oom-protection")
    assert f.summary == "systemd-oomd runs: an over-allocation is killed"
    assert f.evidence == ("swap: 16.0 GiB",)
    both = one(host_system.memory_protection(snap(host_setup__oom={"earlyoom": True, "systemd-oomd": True})),
               GotchaId.G3)  # fmt: skip
    assert both.summary == "earlyoom, systemd-oomd runs: an over-allocation is killed"


def test_no_oom_daemon_and_swap_not_read():
    f = one(host_system.memory_protection(snap(
        host_setup__oom={"earlyoom": False, "systemd-oomd": False}, meminfo__SwapTotal=None
    )), GotchaId.G3)  # fmt: skip
    assert f.status is Status.WARN
    assert f.summary == (
        "neither earlyoom nor systemd-oomd runs: on unified memory an over-allocation can hang the whole "
        "machine instead of ending in an OOM kill"
    )
    assert f.evidence == ("swap: not read", CHECKS.oom_source)
    assert f.fix == CHECKS.oom_fix


def test_a_gate_snapshot_skips_the_memory_and_cpu_checks_under_their_gotchas():
    f = snap(host_setup=None)
    oom = one(host_system.memory_protection(f), GotchaId.G3)
    cpu = one(host_system.cpu_frequency(f), GotchaId.G4)
    for got, subject in ((oom, "host:oom-protection"), (cpu, "host:cpu-frequency")):
        assert (got.status, got.subject) == (Status.SKIP, subject)
        assert got.summary == "not in this snapshot (taken by the gate, not by sparkenv host)"


def test_full_speed_under_load_with_the_reading():
    f = one(host_system.cpu_frequency(snap()), GotchaId.G4)
    assert (f.status, f.summary) == (Status.PASS, "governor performance; cores at full speed under load")
    assert f.evidence == (
        "governor: performance",
        "driver: cppc_cpufreq",
        "cpu10 with a busy loop on it: 2808 MHz (range 338-2808 MHz)",
    )


def test_a_load_that_could_not_run_is_said_and_nothing_is_measured():
    f = one(host_system.cpu_frequency(snap(host_setup__cpu__load={"error": "sched_setaffinity: EPERM"})),
            GotchaId.G4)  # fmt: skip
    assert (f.status, f.summary) == (Status.PASS, "governor performance; cores (not measured under load)")
    assert f.evidence == ("governor: performance", "driver: cppc_cpufreq", "sched_setaffinity: EPERM")


def test_powersave_with_and_without_the_low_reading():
    cores = [{"cpu": 10, "governor": "powersave", "driver": "cppc_cpufreq", "cur_khz": 338000,
              "max_khz": 2808000}]  # fmt: skip
    slow = snap(host_setup__cpu__cores=cores, host_setup__cpu__load__cur_khz=338000)
    low = one(host_system.cpu_frequency(slow), GotchaId.G4)
    assert low.summary == (
        "the powersave governor holds cores at their lowest frequency (cpu10 ran at 338 MHz of its 2808 MHz "
        "with a busy loop on it)"
    )
    assert low.evidence[-1] == "cpu10 with a busy loop on it: 338 MHz (range 0-2808 MHz)"  # no minimum read
    assert low.fix == CHECKS.governor_fix
    fast = one(host_system.cpu_frequency(snap(host_setup__cpu__cores=cores)), GotchaId.G4)
    assert fast.summary == "the powersave governor holds cores at their lowest frequency"


def test_autonomous_mode_off_with_and_without_the_low_reading():
    off = one(host_system.cpu_frequency(snap("gb10-cppc-autonomous-off")), GotchaId.G4)
    assert off.summary == (
        "cppc_cpufreq's autonomous mode is off: GB10 memory bandwidth and prompt processing fall far below "
        "stock DGX OS (cpu10 ran at 338 MHz of its 2808 MHz with a busy loop on it)"
    )
    assert off.evidence[-1] == CHECKS.cppc_source and off.fix == CHECKS.cppc_fix
    fast = one(host_system.cpu_frequency(snap(host_setup__cpu__auto_sel_mode="N")), GotchaId.G4)
    assert fast.summary == (
        "cppc_cpufreq's autonomous mode is off: GB10 memory bandwidth and prompt processing fall far below "
        "stock DGX OS"
    )


def test_a_partial_update_names_both_parts_and_which_way_each_differs():
    row = ROWS["7.6.0"]
    f = one(host_system.dgx_os_release(snap("gb10-dgx-os-7.6.0-partial")), GotchaId.G1)
    assert (f.status, f.subject) == (Status.INFO, "host:dgx-os")
    assert f.summary == (
        f"DGX OS 7.6.0 ships kernel {row.kernel} and driver {row.driver}; this machine runs kernel "
        "6.17.0-1014-nvidia (older) and driver 580.126.09 (older): a partial update: the release's packages "
        "are not all installed, or the machine booted an older kernel"
    )
    assert f.evidence == (row.source, row.kernel_source)
    assert f.fix == "sudo apt update && sudo apt full-upgrade, then reboot"


def test_a_release_with_nothing_to_compare():
    """7.5.0's kernel is UNVERIFIED, and no driver was read (no module, no NVML): nothing is compared,
    and that is said."""
    f = one(host_system.dgx_os_release(snap(
        host_setup__platform__dgx_release={"DGX_SWBUILD_VERSION": "7.5.0"},
        driver={"proc_version": None, "version": None, "error": "no such file"},
        gpu={"available": False, "source": "nvml", "error": "libnvidia-ml.so.1 not found"},
    )), GotchaId.G1)  # fmt: skip
    assert f.status is Status.PASS
    assert f.summary == (
        f"DGX OS 7.5.0 ({ROWS['7.5.0'].date}): nothing compared as it ships; kernel {ROWS['7.5.0'].kernel} "
        "UNVERIFIED (no public source)"
    )


def test_no_cma_on_a_spark_and_off_it():
    f = one(host_system.cma(snap(meminfo__CmaTotal=0)), GotchaId.G10)
    assert (f.status, f.subject) == (Status.WARN, "host:cma")
    assert f.summary == (
        "CmaTotal: 0 kB: RDMA memory registration fails, so NCCL over the ConnectX-7 link between two Sparks "
        "cannot start"
    )
    assert f.evidence == ("kernel 6.17.0-1014-nvidia, DGX OS 7.4.0, Ubuntu 24.04.3 LTS",)
    assert f.fix == "boot a DGX OS kernel with CMA (or add cma= to the kernel command line)"
    none = one(host_system.cma(snap(meminfo__CmaTotal=None)), GotchaId.G10)
    assert none.summary.startswith("no CmaTotal in /proc/meminfo (a kernel without CMA): RDMA memory")
    off = one(host_system.cma(snap(**OFF_SPARK, meminfo__CmaTotal=0)), GotchaId.G10)
    assert (off.status, off.summary) == (
        Status.SKIP,
        "CmaTotal: 0 kB: matters only for RDMA between two Sparks",
    )

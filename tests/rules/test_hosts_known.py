"""rules/hosts.py: the known-bad hosts of data/hosts.toml matched against what the gate or `sparkenv
host` read, and the finding each match gives — in full, since its summary names the problem and the
release that fixed it, its evidence what matched, and its fix what to do. The rows of data/hosts.toml
as they stand; the two conditions no row uses yet (a driver below a version, a CUDA release from a
version on) on an issue made here the way the data file's loader makes one."""

from __future__ import annotations

from sparkenv.core.report import GotchaId, Status
from sparkenv.knowledge import hosts as host_data
from sparkenv.knowledge.records.hosts import HostIssue
from sparkenv.rules import hosts

CMA_KERNEL = "7.0.0-1019-nvidia"
DRIVER = "580.126.09"
ISSUES = {i.id: i for i in host_data().issues}


def test_a_kernel_without_cma_on_one_node_and_across_nodes():
    issue = ISSUES["cma-zero"]
    (one,) = hosts.judge(CMA_KERNEL, {"CmaTotal": 0, "MemTotal": 128 << 20}, DRIVER)
    assert (one.id, one.status, one.subject) == (GotchaId.G10, Status.WARN, "host:cma-zero")
    assert one.summary == f"known host problem (cma-zero, fixed in {issue.fixed}): {issue.problem}"
    assert one.evidence == (f"kernel {CMA_KERNEL}", f"driver {DRIVER}", "CmaTotal: 0 kB", issue.source)
    assert one.fix == issue.fix
    (across,) = hosts.judge(CMA_KERNEL, {"CmaTotal": 0}, DRIVER, multi_node=True)
    assert across.status is Status.FAIL
    (no_driver,) = hosts.judge(CMA_KERNEL, {"CmaTotal": 0}, None)
    assert no_driver.evidence == (f"kernel {CMA_KERNEL}", "CmaTotal: 0 kB", issue.source)


def test_the_cma_issue_needs_both_its_kernel_and_its_reading():
    assert hosts.judge(CMA_KERNEL, {"CmaTotal": 65536}, DRIVER) == []
    assert hosts.judge(CMA_KERNEL, None, DRIVER) == []
    assert hosts.judge("6.17.0-1014-nvidia", {"CmaTotal": 0}, DRIVER) == []
    assert hosts.judge(None, {"CmaTotal": 0}, DRIVER) == []


def test_a_kernel_that_loses_the_gpu_is_named_without_a_meminfo_reading():
    (f,) = hosts.judge("6.17.0-1008-nvidia", None, DRIVER)
    assert (f.id, f.status, f.subject) == (GotchaId.G1, Status.WARN, "host:gpu-lost-6.17.0-1008")
    assert f.evidence == (
        "kernel 6.17.0-1008-nvidia",
        f"driver {DRIVER}",
        ISSUES["gpu-lost-6.17.0-1008"].source,
    )


def test_the_proprietary_module_only_where_its_flavour_was_read_on_a_spark():
    issue = ISSUES["proprietary-module-gb10"]
    (f,) = hosts.judge("6.17.0-1014-nvidia", None, DRIVER, module="proprietary", spark=True)
    assert (f.id, f.status, f.subject) == (GotchaId.G1, Status.FAIL, "host:proprietary-module-gb10")
    assert f.evidence == (f"driver {DRIVER}", "proprietary kernel module", issue.source)
    assert f.fix == issue.fix
    assert hosts.judge("6.17.0-1014-nvidia", None, DRIVER, module="open", spark=True) == []
    assert hosts.judge("6.17.0-1014-nvidia", None, DRIVER, module=None, spark=True) == []
    assert hosts.judge("6.17.0-1014-nvidia", None, DRIVER, module="proprietary", spark=False) == []
    assert [i.id for i in hosts.matching(None, None, DRIVER, module="proprietary", spark=True)] == [issue.id]


def _issue(**when) -> HostIssue:
    return HostIssue(
        id="made-here", gotcha=GotchaId.G1, status=Status.WARN, multi_node_status=Status.FAIL,
        problem="a problem", fixed="later", fix="update", source="https://example.org/issue", **when,
    )  # fmt: skip


def test_a_driver_below_a_version():
    issue = _issue(driver_below="580.95.05")
    assert hosts._matches(issue, None, {}, "580.82.09", None)
    assert hosts._matches(issue, None, {}, "575.100.1", None)  # numbers, not text: 575.100 < 580.95
    assert not hosts._matches(issue, None, {}, "580.95.05", None)
    assert not hosts._matches(issue, None, {}, "580.126.09", None)
    assert not hosts._matches(issue, None, {}, None, None)  # no driver read: nothing to say it is older


def test_a_cuda_release_from_a_version_on():
    issue = _issue(cuda_at_least="13.0")
    assert hosts._matches(issue, None, {}, DRIVER, "13.0.2.006")
    assert hosts._matches(issue, None, {}, DRIVER, "13.1")
    assert not hosts._matches(issue, None, {}, DRIVER, "12.9.1")
    assert not hosts._matches(issue, None, {}, DRIVER, None)
    assert not hosts._matches(issue, None, {}, DRIVER, "not a version")


def test_a_kernel_and_a_reading_together():
    issue = _issue(kernel=CMA_KERNEL, meminfo={"CmaTotal": 0, "HugePages_Total": 0})
    assert hosts._matches(issue, CMA_KERNEL, {"CmaTotal": 0, "HugePages_Total": 0}, None, None)
    assert not hosts._matches(issue, CMA_KERNEL, {"CmaTotal": 0, "HugePages_Total": 4}, None, None)
    assert not hosts._matches(issue, CMA_KERNEL, {"CmaTotal": 0}, None, None)

"""`sparkenv host --facts` over snapshots of the public field reports (tests/fixtures/host/SOURCES.md):
each known host failure gives its FAIL or WARN with the fix, through the real command line; bad input
is one line and exit 2; a gate snapshot replays too (one schema)."""

from __future__ import annotations

import json
from pathlib import Path

import jsonschema
import pytest
from host_helpers import FIXTURES, ROOT, finding, report_schema

from sparkenv.core.report import LINE_RE

# fixture -> (the finding's subject, status, a part of its fix, the exit code)
REPORTS = {
    "gb10-6.17.0-1008-gpu-lost": ("host:gpu-lost-6.17.0-1008", "WARN", "apt full-upgrade", 1),
    "gb10-proprietary-module": ("host:proprietary-module-gb10", "FAIL", "nvidia-driver-580-open", 1),
    "gb10-7.0.0-1019-cma-zero": ("host:cma-zero", "WARN", "6.17 DGX OS kernel", 0),
    "gb10-cppc-autonomous-off": ("host:cpu-frequency", "WARN", "cppc_cpufreq.auto_sel_mode=1", 0),
    "gb10-user-not-in-docker-group": ("docker:socket", "FAIL", "sudo usermod -aG docker $USER", 1),
    "gb10-no-nvidia-runtime": (
        "docker:nvidia-runtime",
        "FAIL",
        "nvidia-ctk runtime configure --runtime=docker",
        1,
    ),
    "gb10-amd64-image": ("docker:gpu-container", "FAIL", "arm64", 1),
    "gb10-dgx-os-7.6.0": ("host:dgx-os", "PASS", "", 0),
    "gb10-dgx-os-7.6.0-partial": ("host:dgx-os", "INFO", "sudo apt full-upgrade", 0),
    "gb10-dgx-os-too-new": ("host:dgx-os", "INFO", "[[dgx_os]] row for 7.9.0", 0),
}

# fixture -> what the DGX OS release line must name (the release, what it ships, what runs)
DGX_OS = {
    "gb10-dgx-os-7.6.0": ("DGX OS 7.6.0 (2026-09-14)", "kernel 7.0.0-1019-nvidia", "driver 580.178.04"),
    "gb10-dgx-os-7.6.0-partial": (
        "DGX OS 7.6.0 ships kernel 7.0.0-1019-nvidia and driver 580.178.04",
        "this machine runs kernel 6.17.0-1014-nvidia (older) and driver 580.126.09 (older)",
        "a partial update",
    ),
    "gb10-dgx-os-too-new": (
        "DGX OS release 7.9.0 is newer than any sparkenv knows",
        "newest 7.6.0",
        "reviewed",
    ),
}


@pytest.mark.parametrize("name", sorted(REPORTS))
def test_a_field_report_gives_its_finding_and_fix(run, name):  # type: ignore[no-untyped-def]
    subject, status, fix, code = REPORTS[name]
    path = FIXTURES / f"{name}.json"
    r = run("host", "--facts", str(path), "--json")
    report = r.json()
    jsonschema.validate(report, report_schema())
    f = finding(report, subject)
    assert f["status"] == status and fix in (f["fix"] or ""), f
    assert r.code == code
    assert report["context"]["platform"] == "dgx-spark"
    text = run("host", "--facts", str(path))
    # an INFO line prints no fix (as every INFO): the JSON above carries it
    said = f["summary"][:60] if status == "INFO" else fix
    line = next(ln for ln in text.lines if ln.startswith(f"{f['id']} {status}: ") and said in ln)
    assert LINE_RE.match(line)


@pytest.mark.parametrize("name", sorted(DGX_OS))
def test_the_dgx_os_release_line_names_what_ships_and_what_runs(run, name):  # type: ignore[no-untyped-def]
    report = run("host", "--facts", str(FIXTURES / f"{name}.json"), "--json").json()
    summary = finding(report, "host:dgx-os")["summary"]
    assert all(part in summary for part in DGX_OS[name]), summary


def test_a_healthy_spark_has_nothing_to_fix(run):  # type: ignore[no-untyped-def]
    report = run("host", "--facts", str(FIXTURES / "gb10-healthy.json"), "--json").json()
    assert report["verdict"] == "ready"
    assert {f["status"] for f in report["findings"]} <= {"PASS", "SKIP"}


def test_every_field_report_is_listed_with_its_source():
    sources = (FIXTURES / "SOURCES.md").read_text()
    for path in FIXTURES.glob("*.json"):
        assert f"| {path.name} |" in sources, path.name
    assert set(REPORTS) | {"gb10-healthy"} == {p.stem for p in FIXTURES.glob("*.json")}


def test_a_gate_snapshot_replays_through_host(run):  # type: ignore[no-untyped-def]
    r = run("host", "--facts", str(ROOT / "tests" / "fixtures" / "facts" / "h200-static.json"), "--json")
    report = r.json()
    assert finding(report, "nvidia-driver")["status"] == "PASS"
    assert "open kernel module" in finding(report, "nvidia-driver")["summary"]
    assert "taken by the gate" in finding(report, "docker")["summary"]


@pytest.mark.parametrize(
    ("args", "says"),
    [
        (["--facts", "/nonexistent/spark.json"], "/nonexistent/spark.json"),
        (["--timeout", "0"], "--timeout 0"),
        (["--timeout", "nan"], "--timeout nan"),
        (["--facts", "FIXTURE", "--image", "x:1"], "cannot go with --facts"),
    ],
)
def test_bad_input_is_one_line_and_exit_2(run, args, says):  # type: ignore[no-untyped-def]
    args = [str(FIXTURES / "gb10-healthy.json") if a == "FIXTURE" else a for a in args]
    r = run("host", *args)
    assert r.code == 2 and says in r.err and len(r.err.strip().splitlines()) == 1, r.err


def test_a_snapshot_that_breaks_the_schema_is_named(run, tmp_path: Path):  # type: ignore[no-untyped-def]
    raw = json.loads((FIXTURES / "gb10-healthy.json").read_text())
    raw["host_setup"]["cpu"]["cores"][0]["max_khz"] = "fast"
    bad = tmp_path / "bad.json"
    bad.write_text(json.dumps(raw))
    r = run("host", "--facts", str(bad))
    assert r.code == 2 and "max_khz" in r.err and len(r.err.strip().splitlines()) == 1, r.err


def test_the_gpu_machine_recorded_through_the_device_tool_replays_as_it_ran(run):  # type: ignore[no-untyped-def]
    """tests/fixtures/host/recorded/h100-device.json: `sparkenv host --dump-facts` on the lent H100 machine
    (no Docker there, no cpufreq in its VM, the open kernel module). Its replay gives what the live run
    printed there: the driver and its module flavour read for real, the Docker lines SKIP saying a Spark
    would FAIL them, the frequency line SKIP with its reason."""
    r = run("host", "--facts", str(FIXTURES / "recorded" / "h100-device.json"), "--json")
    report = r.json()
    jsonschema.validate(report, report_schema())
    driver = finding(report, "nvidia-driver")
    assert driver["status"] == "PASS" and "580.159.04" in driver["summary"]
    assert "open kernel module" in driver["summary"] and "H100" in driver["summary"]
    assert finding(report, "host:cpu-frequency")["status"] == "SKIP"
    socket = finding(report, "docker:socket")
    assert socket["status"] == "SKIP" and "on a DGX Spark this is a FAIL" in socket["summary"]
    assert finding(report, "host:oom-protection")["status"] == "WARN"
    assert report["context"]["platform"] == "generic-nvidia"
    assert r.code == 0

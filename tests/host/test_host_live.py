"""`sparkenv host` on this machine, for real: whatever it has (Docker or not, a GPU or not) is read and
said, with the lines that need what is missing saying SKIP and why. On the test machines: Docker
present, no GPU; on the GPU machine: driver, module flavour and cpufreq read for real, no Docker."""

from __future__ import annotations

import json
import os
import re

import jsonschema
import pytest
from host_helpers import engine_or_skip, finding, report_schema

from sparkenv.core.report import LINE_RE
from sparkenv.cuda.driver import module_flavour
from sparkenv.host import probes

PROC_DRIVER = "/proc/driver/nvidia/version"


def test_this_machine_text_and_json(run):  # type: ignore[no-untyped-def]
    text = run("host")
    assert text.code in (0, 1), text.err
    lines = text.lines
    findings = [ln for ln in lines if not ln.startswith(("platform:", "verdict:"))]
    assert findings and all(LINE_RE.match(ln) for ln in findings), text.out
    assert lines[-1].startswith("verdict: ")
    r = run("host", "--json")
    report = r.json()
    jsonschema.validate(report, report_schema())
    assert report["command"] == "host"
    assert r.code == (1 if any(f["status"] == "FAIL" for f in report["findings"]) else 0)
    driver = finding(report, "nvidia-driver")
    if not os.path.exists(PROC_DRIVER):
        # no GPU here: the GPU lines SKIP with the reason, naming what was looked for
        assert driver["status"] == "SKIP" and PROC_DRIVER in driver["summary"], driver
        assert report["context"]["module"] is None
    else:
        # a GPU machine: the module's version and flavour, read for real
        with open(PROC_DRIVER) as fh:
            flavour = module_flavour(fh.read(), None)
        assert report["context"]["module"] == flavour and flavour in driver["summary"], driver
    cpu = finding(report, "host:cpu-frequency")
    if not os.path.isdir("/sys/devices/system/cpu/cpu0/cpufreq"):
        assert cpu["status"] == "SKIP" and "no cpufreq" in cpu["summary"]
    else:
        assert cpu["status"] in ("PASS", "WARN") and any("busy loop" in e for e in cpu["evidence"]), cpu


@pytest.mark.docker
def test_docker_here_is_reached_for_real(run):  # type: ignore[no-untyped-def]
    info = engine_or_skip()
    report = run("host", "--json").json()
    engine = finding(report, "docker:engine")
    assert engine["status"] == "PASS" and info["version"] in engine["summary"]
    if os.getuid() == 0:
        assert finding(report, "docker:socket")["status"] == "PASS"
    runtime = finding(report, "docker:nvidia-runtime")
    if "nvidia" not in info["runtimes"] and not os.path.exists(PROC_DRIVER):
        assert runtime["status"] == "SKIP" and "no NVIDIA driver here" in runtime["summary"]
    disk = finding(report, "docker:disk")
    assert disk["status"] in ("PASS", "WARN") and info["root_dir"] in disk["summary"]


def test_dump_replays_to_the_same_findings_and_the_gate_reads_it(run, tmp_path):  # type: ignore[no-untyped-def]
    snap = tmp_path / "host.json"
    live = run("host", "--json", "--dump-facts", str(snap))
    raw = json.loads(snap.read_text())
    assert raw["schema"] == "sparkenv.facts/1" and "host_setup" in raw
    again = run("host", "--json", "--facts", str(snap))
    assert again.code == live.code
    assert again.json()["findings"] == live.json()["findings"]
    assert again.json()["context"]["facts"] == f"replayed from {snap}"
    gate = run("gate", "--facts", str(snap))  # one schema: the gate's loader takes the host's snapshot
    assert gate.code in (0, 1), gate.err


def test_the_busy_loop_is_bounded_and_gone_after():  # type: ignore[no-untyped-def]
    found = probes.probe_cpu(0.5)
    assert "cores" in found
    if found["cores"]:
        assert found["load"]["cpu"] in {c["cpu"] for c in found["cores"]}
    left = []
    for pid in filter(str.isdigit, os.listdir("/proc")):
        try:
            with open(f"/proc/{pid}/cmdline", "rb") as fh:
                if b"sched_setaffinity" in fh.read():
                    left.append(pid)
        except OSError:
            continue
    assert left == []


def test_help_teaches(run):  # type: ignore[no-untyped-def]
    r = run("host", "--help")
    assert r.code == 0
    text = re.sub(r"\s+", " ", r.out)
    for words in (
        "first thing to run on a new Spark",
        "--image",
        "--dump-facts",
        "--facts",
        "--json",
        "docker group",
        "open or proprietary",
        "busy loop",
        "sparkenv host --image",
    ):
        assert words in text, words

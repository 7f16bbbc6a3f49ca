"""The gate on GB10 snapshots of newer NGC images, replayed with --facts: copies of the public GB10 reports'
snapshot (gate_helpers.gb10_from_reports, driver 580.126.09) with the image's release, torch and CUDA
edited in. What the driver runs the image's CUDA under is said from the facts read (compat_mode); a base or
driver newer than sparkenv's data is an INFO naming what is unknown, never judged silently as the newest."""

from __future__ import annotations

from typing import Any

import gate_helpers as gh

from sparkenv.core.report import LINE_RE


def spark_on(release: str, torch: str, cuda: str, *, driver: str | None = None, compat: str | None = None):
    """The GB10 snapshot running NGC `release` (torch `torch` built for CUDA `cuda`)."""
    facts: dict[str, Any] = gh.gb10_from_reports()
    facts["env"]["NVIDIA_PYTORCH_VERSION"] = release
    facts["torch"]["stages"]["imported"].update(version=torch, cuda=cuda)
    facts["dists"]["torch"] = torch
    if driver or compat:
        reported = facts["smi"]["gpus"][0]["driver_version"]
        facts["driver"] = {"proc_version": None, "version": driver or reported, "compat_libcuda": compat}
    return facts


def replay(tmp_path, facts: dict[str, Any], name: str):
    r = gh.gate_inprocess(["--facts", gh.write(tmp_path, facts, name), "--json"])
    return r, r.json()


def by_subject(report: dict[str, Any], gid: str, subject: str) -> dict[str, Any]:
    found = [f for f in report["findings"] if f["id"] == gid and f["subject"] == subject]
    assert len(found) == 1, [f"{f['id']} {f['subject']}" for f in report["findings"]]
    return found[0]


def test_a_26_09_image_on_driver_580_of_a_gb10_runs_under_minor_version_compatibility(tmp_path):
    """The field report's "forward-compatibility mode on driver 580": the image carries a cuda-compat
    libcuda, the GB10 does not load it, and 580 is above CUDA 13's floor: minor-version compatibility."""
    facts = spark_on("26.09", "2.14.0a0+b2c75dd062.nv26.09", "13.4", compat="615.0.0")
    _, report = replay(tmp_path, facts, "26.09-580.json")
    g1 = by_subject(report, "G1", "driver")
    assert g1["status"] == "WARN"
    assert g1["summary"].startswith(
        "driver 580.126.09 is older than CUDA 13.4 (GA; update unknown) of PyTorch"
    )
    assert "only under CUDA minor version compatibility — not forward compatibility" in g1["summary"]
    assert "cuda-compat libcuda 615.0.0 does not load on NVIDIA GB10" in g1["summary"]
    assert any(e.startswith("UNVERIFIED: 615 is the driver branch") for e in g1["evidence"])
    # 26.09 and driver 580 are both known: no age INFO
    assert not [f for f in report["findings"] if "newer than any sparkenv knows" in f["summary"]]


def test_the_same_image_on_a_driver_that_meets_its_minimum_passes(tmp_path):
    facts = spark_on("26.06", "2.13.0a0+8145d630e8.nv26.06", "13.3", driver="610.43.02")
    _, report = replay(tmp_path, facts, "26.06-610.json")
    assert by_subject(report, "G1", "driver")["status"] == "PASS"


def test_a_base_and_driver_newer_than_the_data_are_each_an_info_saying_what_is_unknown(tmp_path):
    facts = spark_on("26.10", "2.15.0a0+0123456789.nv26.10", "13.5", driver="620.10.01")
    r, report = replay(tmp_path, facts, "26.10-620.json")
    assert r.code == 0
    base = by_subject(report, "G9", "NGC 26.10")
    assert base["status"] == "INFO"
    assert "NGC PyTorch release 26.10 is newer than any sparkenv knows (newest 26.09" in base["summary"]
    assert base["fix"].startswith(
        "sparkenv profiles new ngc-26.10 --from-image nvcr.io/nvidia/pytorch:26.10-py3"
    )
    g1 = by_subject(report, "G1", "driver")
    assert g1["status"] == "INFO"
    assert "CUDA release 13.5 is newer than any sparkenv knows (newest 13.4.1" in g1["summary"]
    assert "the driver it needs is unknown to sparkenv" in g1["summary"]
    assert "drivers.toml" in g1["fix"]
    table = by_subject(report, "G1", "driver table (sparkenv/data/drivers.toml)")
    assert table["status"] == "INFO" and table["summary"].startswith(
        "driver 620.10.01 is newer than any sparkenv knows (newest 615"
    )
    text = gh.gate_inprocess(["--facts", gh.write(tmp_path, facts, "again.json")])
    lines = [ln for ln in text.lines if ln.startswith("G")]
    assert all(LINE_RE.match(ln) for ln in lines)
    assert sum("26.10 is newer than any sparkenv knows" in ln for ln in lines) == 1  # said once


def test_a_newer_image_on_an_old_driver_is_judged_by_the_newest_known_release_and_says_so(tmp_path):
    facts = spark_on("26.10", "2.15.0a0+0123456789.nv26.10", "13.5")
    _, report = replay(tmp_path, facts, "26.10-580.json")
    g1 = by_subject(report, "G1", "driver")
    assert g1["status"] == "WARN" and "minor version compatibility" in g1["summary"]
    assert "CUDA release 13.5 is newer than any sparkenv knows" in g1["summary"]
    assert "so it is judged by the newest 13.4.1" in g1["summary"]

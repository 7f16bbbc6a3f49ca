"""The output contract of DESIGN.md: lines, verdict, JSON schema, JUnit, exit codes, explain, errors."""

from __future__ import annotations

import json
import os
import sys
import xml.etree.ElementTree as ET
from importlib import resources
from pathlib import Path

import jsonschema
import pytest
from audit_layouts import cuda13_torch

from sparkenv.core.report import LINE_RE


@pytest.fixture
def mixed_env(env, elves):
    """One FAIL (cupy-cuda12x), one WARN (residue), PASSes and INFOs."""
    cuda13_torch(env, elves)
    env.add("cupy-cuda12x", "13.6.0")
    env.add(
        "nvidia-cublas-cu12",
        "12.8.4.1",
        files={"nvidia/cublas/lib/libcublas.so.12": elves.stub("libcublas.so.12")},
    )
    return env


def test_every_line_is_a_finding_then_the_verdict(mixed_env, run, clean_root):
    r = run("audit", str(mixed_env.prefix), "--root", str(clean_root))
    *findings, verdict = r.lines
    assert findings and all(LINE_RE.match(ln) for ln in findings), r.out
    assert verdict.startswith("verdict: blocked")
    assert [ln.split(":")[0].split()[0] for ln in findings] == sorted(
        (ln.split(":")[0].split()[0] for ln in findings), key=lambda g: int(g[1:])
    )


def test_json_validates_against_the_documented_schema(mixed_env, run, clean_root, tmp_path: Path):
    schema = json.loads(resources.files("sparkenv").joinpath("data", "report.schema.json").read_text())
    report = tmp_path / "out" / "report.json"
    report.parent.mkdir()
    r = run("audit", str(mixed_env.prefix), "--root", str(clean_root), "--json", "--report", str(report))
    data = r.json()
    jsonschema.validate(data, schema)
    assert data["schema"] == "sparkenv.core.report/1" and data["command"] == "audit"
    assert data["verdict"] == "blocked" and data["counts"]["FAIL"] == 1 and data["counts"]["WARN"] >= 1
    cupy = next(f for f in data["findings"] if f["subject"] == "cupy-cuda12x")
    assert cupy["status"] == "FAIL" and "cupy-cuda13x" in cupy["fix"] and cupy["evidence"]
    assert json.loads(report.read_text()) == data
    assert not list(report.parent.glob(".*.tmp"))
    subjects = [(f["id"], f["subject"]) for f in data["findings"]]
    assert len(subjects) == len(set(subjects))


def test_text_and_report_file_together(mixed_env, run, clean_root, tmp_path: Path):
    report = tmp_path / "r.json"
    r = run("audit", str(mixed_env.prefix), "--root", str(clean_root), "--report", str(report), "-q")
    assert all(ln.split()[1].rstrip(":") in ("FAIL", "WARN", "ERROR") for ln in r.lines[:-1])
    assert len(json.loads(report.read_text())["findings"]) > len(r.lines) - 1  # quiet hides PASS/INFO only


def test_junit_has_one_case_per_finding(mixed_env, run, clean_root, tmp_path: Path):
    junit = tmp_path / "audit.xml"
    r = run("audit", str(mixed_env.prefix), "--root", str(clean_root), "--junit", str(junit), "--json")
    findings = r.json()["findings"]
    suite = ET.parse(junit).getroot()
    cases = suite.findall("testcase")
    assert len(cases) == len(findings) == int(suite.get("tests"))
    failed = [c.get("name") for c in cases if c.find("failure") is not None]
    assert failed == ["cupy-cuda12x"] and suite.get("failures") == "1"
    run("audit", str(mixed_env.prefix), "--root", str(clean_root), "--junit", str(junit), "--strict")
    strict_failed = [
        c.get("name") for c in ET.parse(junit).getroot().findall("testcase") if c.find("failure") is not None
    ]
    assert "nvidia-cublas-cu12" in strict_failed


def test_exit_codes(env, elves, run, clean_root, tmp_path: Path):
    cuda13_torch(env, elves)
    root_with_marker = tmp_path / "ctr"
    root_with_marker.mkdir()
    (root_with_marker / ".dockerenv").write_text("")
    assert run("audit", str(env.prefix), "--root", str(root_with_marker)).code == 0  # all clear
    assert run("audit", str(env.prefix), "--root", str(clean_root)).code == 0  # WARN only
    assert run("audit", str(env.prefix), "--root", str(clean_root), "--strict").code == 1
    env.add("cupy-cuda12x", "13.6.0")
    assert run("audit", str(env.prefix), "--root", str(root_with_marker)).code == 1


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["audit", "/nonexistent/venv"], "/nonexistent/venv: no such file or directory"),
        (["audit", "{empty}"], "no site-packages folder found"),
        (["audit", "{textfile}"], "not a Python interpreter"),
        (["explain", "G11"], "G11: no such gotcha"),
        (
            ["audit", "{venv}", "--report", "/nonexistent/dir/r.json"],
            "/nonexistent/dir/r.json: cannot write: folder /nonexistent/dir does not exist",
        ),
    ],
)
def test_bad_input_is_one_line_exit_2_no_traceback(env, run, tmp_path: Path, args, message):
    (tmp_path / "empty").mkdir()
    (tmp_path / "notes.txt").write_text("hello")
    fill = {"empty": tmp_path / "empty", "textfile": tmp_path / "notes.txt", "venv": env.prefix}
    r = run(*[a.format(**fill) for a in args])
    assert r.code == 2
    assert "Traceback" not in r.err and len(r.err.strip().splitlines()) == 1
    assert r.err.startswith("sparkenv: error: ") and message in r.err


def test_unknown_option_is_a_usage_error(run):
    r = run("audit", "--no-such-option")
    assert r.code == 2 and "No such option" in r.err and "Traceback" not in r.err


@pytest.mark.parametrize("n", range(1, 11))
def test_explain_each_gotcha(run, n: int):
    r = run("explain", f"G{n}")
    assert r.code == 0
    assert r.lines[0].startswith(f"G{n}: ")
    for field in ("stages:", "symptom:", "cause:", "check:", "fix:"):
        assert field in r.out
    assert run("explain", str(n)).out == r.out


def test_explain_lists_all_ten(run):
    r = run("explain")
    assert [ln.split()[0] for ln in r.lines[:10]] == [f"G{n}" for n in range(1, 11)]
    assert "Where things are" in r.out and "sparkenv/rules/gN.py" in r.out


def test_help_teaches(run):
    top = run("--help")
    assert top.code == 0 and "audit" in top.out and "explain" in top.out and "Exit codes" in top.out
    audit = run("audit", "--help")
    for option in ("--lock", "--json", "--report", "--junit", "--strict", "--machine", "Examples"):
        assert option in audit.out


def test_console_script_is_installed():
    import shutil
    import subprocess

    beside = os.path.join(os.path.dirname(sys.executable), "sparkenv")  # where pip put it for this Python
    exe = beside if os.path.exists(beside) else shutil.which("sparkenv")
    assert exe, "the sparkenv console script is not installed"
    proc = subprocess.run([exe, "explain", "G3"], capture_output=True, text=True, timeout=60)
    assert proc.returncode == 0 and "drop_caches" in proc.stdout

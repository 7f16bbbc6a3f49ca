"""One reporting path for every command that reports: the same options with the same meaning, JSON valid
against the shipped schema for each command, --select/--ignore, -h, one platform spelling."""

from __future__ import annotations

import json
from importlib import resources
from pathlib import Path

import jsonschema
import pytest

from sparkenv.report import COMMANDS, LINE_RE

FACTS = Path(__file__).parent / "fixtures" / "facts"


def _schema() -> dict:
    return json.loads(resources.files("sparkenv").joinpath("data", "report.schema.json").read_text())


def test_the_schema_names_every_reporting_command():
    assert tuple(_schema()["properties"]["command"]["enum"]) == COMMANDS


def _requirements(tmp_path: Path) -> Path:
    req = tmp_path / "requirements.txt"
    req.write_text("cupy-cuda12x\ntransformers\n")
    return req


def _commands(tmp_path: Path, env, clean_root: Path) -> dict[str, list[str]]:
    """One invocation of each reporting command (build's is in test_build_docker: it needs an engine)."""
    req = _requirements(tmp_path)
    return {
        "check": ["check", str(req)],
        "lock": ["lock", "--check", "--output-dir", str(Path(__file__).parent.parent / "lockfiles")],
        "audit": ["audit", str(env.prefix), "--root", str(clean_root)],
        "gate": ["gate", "--facts", str(FACTS / "h200-live.json")],
        "patch": ["patch", "sdpa", str(env.prefix)],
    }


def test_json_of_every_command_validates_against_the_shipped_schema(run, tmp_path, env, clean_root):
    env.add("cupy-cuda12x", "13.6.0")
    schema = _schema()
    for command, argv in _commands(tmp_path, env, clean_root).items():
        junit = tmp_path / f"{command}.xml"
        r = run(*argv, "--json", "--junit", str(junit))
        assert r.code in (0, 1), (command, r.err)
        data = r.json()
        jsonschema.validate(data, schema)
        assert data["command"] == command
        assert junit.read_text().startswith('<?xml version="1.0" encoding="utf-8"?>'), command


def test_select_and_ignore_filter_the_report_the_verdict_and_the_exit_code(run, env, clean_root):
    env.add("cupy-cuda12x", "13.6.0")  # a G1 FAIL
    base = ["audit", str(env.prefix), "--root", str(clean_root)]
    everything = run(*base)
    assert everything.code == 1 and any(ln.startswith("G9 ") for ln in everything.lines)
    only_g9 = run(*base, "--select", "G9")
    findings = [ln for ln in only_g9.lines if LINE_RE.match(ln)]
    assert findings and all(ln.startswith("G9 ") for ln in findings)
    assert only_g9.code == 0 and only_g9.lines[-1].startswith("verdict: ready")
    without_g1 = run(*base, "--ignore", "g1", "--ignore", "8")  # case, bare numbers and repeats
    assert without_g1.code == 0 and not any(ln.startswith("G1 ") for ln in without_g1.lines)
    data = run(*base, "--select", "G1,G2", "--json").json()
    assert {f["id"] for f in data["findings"]} <= {"G1", "G2"} and data["context"]["select"] == ["G1", "G2"]


@pytest.mark.parametrize("command", ["check", "lock", "audit", "gate", "patch sdpa", "build"])
def test_a_bad_select_is_one_line_exit_2(run, tmp_path, command):
    argv = [*command.split(), "--select", "G4,G11"]
    if command == "check":
        argv.insert(1, str(_requirements(tmp_path)))
    if command == "build":
        argv.append("--dry-run")
    r = run(*argv)
    assert r.code == 2, (command, r.out, r.err)
    assert r.err.strip().splitlines() == [
        "sparkenv: error: --select G4,G11: 'G11' is not a G-number (G1 … G10)"
    ]


@pytest.mark.parametrize("command", ["check", "lock", "audit", "build", "gate", "patch sdpa", "explain"])
def test_dash_h_on_every_command(run, command):
    r = run(*command.split(), "-h")
    assert r.code == 0 and "Usage:" in r.out
    if command not in ("explain",):
        for option in ("--json", "--report", "--junit", "-q", "--select", "--ignore"):
            assert option in r.out, (command, option)
        assert ("--fail-on-warn" if command == "gate" else "--strict") in r.out


def test_gate_fail_on_warn_blocks_a_strict_start_and_says_so(run, tmp_path):
    facts = json.loads((FACTS / "h200-live.json").read_text())
    facts["loader"] = {"libcudart12": ["/usr/local/cuda-12.8/lib64/libcudart.so.12"]}  # a G1 WARN
    path = tmp_path / "facts.json"
    path.write_text(json.dumps(facts))
    argv = ["gate", "--facts", str(path), "--policy", "strict"]
    assert run(*argv, "--", "true").code == 0  # a WARN does not block --policy strict alone
    blocked = run(*argv, "--fail-on-warn", "--", "true")
    assert blocked.code == 1 and "start blocked by 0 FAIL, 1 WARN/ERROR (--fail-on-warn)" in blocked.err
    assert run(*argv, "--fail-on-warn", "--ignore", "G1", "--", "true").code == 0
    assert run("gate", "--facts", str(path), "--strict").code == 1  # the old spelling still works


def test_one_platform_spelling(run, tmp_path, env, clean_root):
    req = _requirements(tmp_path)
    arm = run("check", str(req), "--platform", "linux/arm64", "--profile", "spark-bare", "--json").json()
    aarch = run("check", str(req), "--platform", "linux/aarch64", "--profile", "spark-bare", "--json").json()
    assert arm["findings"] == aarch["findings"]
    r = run("audit", str(env.prefix), "--root", str(clean_root), "--machine", "arm64")
    assert "environment aarch64" in r.line("G1", "read") and "arm64" not in r.out
    bad = run("audit", str(env.prefix), "--machine", "sparc")
    assert bad.code == 2 and "--machine sparc: not one of aarch64, x86_64" in bad.err

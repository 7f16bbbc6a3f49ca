"""One reporting path for every command that reports: the same options with the same meaning, JSON valid
against the shipped schema for each command, --select/--ignore, -h, one platform spelling."""

from __future__ import annotations

import json
from importlib import resources
from pathlib import Path

import jsonschema
import pytest

from sparkenv.core.report import COMMANDS, LINE_RE

FACTS = Path(__file__).parents[1] / "fixtures" / "facts"


def _schema() -> dict:
    return json.loads(resources.files("sparkenv").joinpath("data", "report.schema.json").read_text())


def test_the_schema_names_every_reporting_command():
    assert tuple(_schema()["properties"]["command"]["enum"]) == COMMANDS


def _requirements(tmp_path: Path) -> Path:
    req = tmp_path / "requirements.txt"
    req.write_text("cupy-cuda12x\ntransformers\n")
    return req


def _facts_with_a_warn(tmp_path: Path) -> Path:
    facts = json.loads((FACTS / "h200-live.json").read_text())
    facts["loader"] = {"libcudart12": ["/usr/local/cuda-12.8/lib64/libcudart.so.12"]}  # a G1 WARN
    path = tmp_path / "facts.json"
    path.write_text(json.dumps(facts))
    return path


def _commands(tmp_path: Path, env, clean_root: Path) -> dict[str, list[str]]:
    """One invocation of each reporting command and of its modes (build's is in test_build_docker: it
    needs an engine; lock's with a resolution in test_lock_index: it needs an index)."""
    req, facts = _requirements(tmp_path), str(_facts_with_a_warn(tmp_path))
    return {
        "check": ["check", str(req)],
        "check --lock-input": ["check", "--lock-input", str(req)],
        "lock --check": ["lock", "--check", "--output-dir", str(Path(__file__).parents[2] / "lockfiles")],
        "audit": ["audit", str(env.prefix), "--root", str(clean_root)],
        "gate": ["gate", "--facts", facts],
        "gate -- CMD": ["gate", "--facts", facts, "--", "true"],  # JSON on stderr
        "patch sdpa": ["patch", "sdpa", str(env.prefix)],
        "patch sdpa --install": ["patch", "sdpa", "--install", str(env.prefix)],
    }


def _with(argv: list[str], *options: str) -> list[str]:
    """argv with options added before the workload's `--`, if it has one."""
    end = argv.index("--") if "--" in argv else len(argv)
    return [*argv[:end], *options, *argv[end:]]


def test_json_of_every_command_validates_against_the_shipped_schema(run, tmp_path, env, clean_root):
    """And the shared options mean the same on each: --report is the JSON of stdout, --format json is
    --json, --sarif is written, a --waive turns its finding into an INFO line that says so."""
    env.add("cupy-cuda12x", "13.6.0")
    schema = _schema()
    waived_in = []
    for mode, argv in _commands(tmp_path, env, clean_root).items():
        name = mode.split()[0]
        junit, report, sarif = (tmp_path / f"{name}.{ext}" for ext in ("xml", "json", "sarif"))
        r = run(*_with(argv, "--json", "--report", str(report), "--junit", str(junit)))
        assert r.code in (0, 1), (mode, r.err)
        data = json.loads(r.err if "--" in argv else r.out)  # in front of a workload the report is on stderr
        jsonschema.validate(data, schema)
        assert data["command"] == name, mode
        assert json.loads(report.read_text()) == data, mode
        assert junit.read_text().startswith('<?xml version="1.0" encoding="utf-8"?>'), mode

        failing = next((f for f in data["findings"] if f["status"] in ("FAIL", "WARN", "ERROR")), None)
        waive = ["--waive", f"{failing['id']}:{failing['subject']}"] if failing else []
        again = run(*_with(argv, "--format", "json", "--sarif", str(sarif), *waive))
        other = json.loads(again.err if "--" in argv else again.out)
        jsonschema.validate(other, schema)
        assert json.loads(sarif.read_text())["version"] == "2.1.0", mode
        if failing:
            key = (failing["id"], failing["subject"])
            [waived] = [f for f in other["findings"] if (f["id"], f["subject"]) == key]
            assert waived["status"] == "INFO" and waived["summary"].startswith("waived"), mode
            waived_in.append(mode)
        assert [f for f in other["findings"] if f["status"] != "INFO"] == [
            f for f in data["findings"] if f["status"] != "INFO" and f is not failing
        ], mode
    assert {"check", "audit", "gate", "gate -- CMD"} <= set(waived_in), waived_in


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


EVERY_COMMAND = ("--json", "--report", "--junit", "--quiet", "--select", "--ignore", "--format", "--sarif")
EVERY_COMMAND += ("--waive", "--waivers")


def _shared_help(command: str) -> dict[str, str]:
    """The shared reporting options of a command, as the typer options declare them: option -> help."""
    from sparkenv.cli import options as cli_options

    params = cli_options.GATE_PARAMETERS if command == "gate" else cli_options.PARAMETERS
    out = {}
    for p in params:
        info = p.annotation.__metadata__[0]  # a typer OptionInfo: its first spelling, then the others
        if not info.hidden:
            out[info.default] = info.help
    return out


@pytest.mark.parametrize("command", ["check", "lock", "audit", "build", "gate", "patch sdpa", "explain"])
def test_dash_h_on_every_command(run, command):
    """-h on every command; on those that report, every shared option with the same help text."""
    r = run(*command.split(), "-h")
    assert r.code == 0 and "Usage:" in r.out
    if command == "explain":
        return
    shown = "".join(r.out.split())  # help is wrapped to the terminal: compare without the whitespace
    shared = _shared_help(command)
    strict = "--fail-on-warn" if command == "gate" else "--strict"
    assert set(shared) == {*EVERY_COMMAND, strict}, command
    for option, text in shared.items():
        assert option in r.out and "".join(text.split()) in shown, (command, option)
    assert "-q, --quiet" in r.out
    if command != "gate":  # the same text for the same option on every command but the gate's strict
        assert shared == _shared_help("check")


def test_gate_fail_on_warn_blocks_a_strict_start_and_says_so(run, tmp_path):
    path = _facts_with_a_warn(tmp_path)
    argv = ["gate", "--facts", str(path), "--policy", "strict"]
    assert run(*argv, "--", "true").code == 0  # a WARN does not block --policy strict alone
    blocked = run(*argv, "--fail-on-warn", "--", "true")
    assert blocked.code == 1 and "start blocked by 0 FAIL, 1 WARN/ERROR (--fail-on-warn)" in blocked.err
    assert run(*argv, "--fail-on-warn", "--ignore", "G1", "--", "true").code == 0
    # a waived finding is shown as waived and blocks nothing: the start follows the report as shown
    [warn] = [
        f for f in run("gate", "--facts", str(path), "--json").json()["findings"] if f["status"] == "WARN"
    ]
    waived = run(*argv, "--fail-on-warn", "--waive", f"G1:{warn['subject']}", "--waive", "G5:x", "--", "true")
    assert waived.code == 0 and "G1 INFO: waived WARN:" in waived.err, waived.err
    assert waived.err.count("matches no finding") == 1  # the waivers are applied once
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

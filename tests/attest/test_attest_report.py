"""`sparkenv attest --record`: the report of a recorded window, as text and as JSON (the documented schema),
with the exit codes users rely on; a cut record is read as far as it goes; a file that is no record, and
bad usage, are one line and exit 2."""

from __future__ import annotations

import json
import re
from importlib import resources

import attest_helpers as ah
import jsonschema
import pytest

LINE_RE = re.compile(r"^G(10|[1-9]) (PASS|FAIL|WARN|SKIP|INFO|ERROR): .+")


def _findings(out: str) -> list[str]:
    return [ln for ln in out.splitlines() if ln and not ln.startswith(("verdict:", " "))]


def test_a_recorded_window_as_text(run):
    r = run("attest", "--record", str(ah.fixture("sdpa-flash.jsonl")), "--attention", "sdpa")
    assert r.code == 0, r.err
    lines = _findings(r.out)
    assert lines and all(LINE_RE.match(ln) for ln in lines), r.out
    assert "G2 PASS: attention ran SDPA flash (67.6 % of GPU time) as asked (SDPA)" in lines
    assert any(ln.startswith("G7 INFO: SDPA flash (torch (libtorch_cuda)): 59.") for ln in lines)
    assert r.out.rstrip().splitlines()[-1] == "verdict: ready"


def test_json_validates_and_a_fail_is_exit_1(run, tmp_path):
    schema = json.loads(resources.files("sparkenv").joinpath("data", "report.schema.json").read_text())
    out = tmp_path / "attest.json"
    r = run("attest", "--record", str(ah.fixture("cpu-op.jsonl")), "--json", "--report", str(out))
    assert r.code == 1, r.err
    data = json.loads(r.out)
    jsonschema.validate(data, schema)
    assert data["command"] == "attest" and data["verdict"] == "blocked"
    cpu = next(f for f in data["findings"] if f["subject"] == "aten::linear")
    assert cpu["id"] == "G7" and cpu["status"] == "FAIL" and "9.1 % of the 8.0 s window" in cpu["summary"]
    assert json.loads(out.read_text()) == data
    subjects = [(f["id"], f["subject"]) for f in data["findings"]]
    assert len(subjects) == len(set(subjects))


def test_sdpa_asked_through_the_environment_and_flash_attn_ran_is_exit_1(run, tmp_path):
    record = ah.flash_attn_ran(tmp_path)
    r = run("attest", "--record", str(record), env={"SPARKENV_SDPA": "1"})
    assert r.code == 1
    assert (
        "G2 FAIL: attention ran flash-attn, not the SDPA asked for: 91.1 % of the window's GPU time" in r.out
    )


def test_a_killed_process_leaves_a_readable_partial_record(run, tmp_path):
    """Cut where a SIGKILL would: after the header and some rows, the last line half-written."""
    r = run("attest", "--record", str(ah.cut(tmp_path, "train", 30)))
    assert r.code == 0, r.err
    assert "G7 WARN: the window did not end in pid" in r.out and "record is partial" in r.out


@pytest.mark.parametrize(
    ("content", "problem"),
    [
        ('{"kind":"header","pid":1}\nnot json\n{"kind":"end"}\n', "line 2 is not JSON"),
        ('{"kind":"tick","t":1}\n', "no header line"),
        ('{"kind":"header","pid":1}\n[1, 2]\n{"kind":"end"}\n', "line 2 has no kind"),
        ('{"kind":"header","pid":"one"}\n', "a malformed row"),
    ],
)
def test_a_file_that_is_no_record_is_one_line_and_exit_2(run, tmp_path, content, problem):
    path = tmp_path / "attest-1.jsonl"
    path.write_text(content)
    r = run("attest", "--record", str(path))
    assert r.code == 2 and r.out == ""
    assert r.err.count("\n") == 1 and str(path) in r.err and problem in r.err, r.err


@pytest.mark.parametrize(
    ("args", "problem"),
    [
        ((), "give a workload after --"),
        (("--record", "x.jsonl", "--", "true"), "not both"),
        (("--record", "/nonexistent/attest-1.jsonl"), "no such attest record"),
        (("--seconds", "0", "--", "true"), "--seconds"),
        (("--seconds", "nan", "--", "true"), "--seconds"),
        (("--steps", "0", "--", "true"), "--steps 0"),
        (("--attention", "xformers", "--", "true"), "--attention 'xformers'"),
    ],
)
def test_bad_usage_is_one_line_and_exit_2(run, args, problem):
    r = run("attest", *args)
    assert r.code == 2, (r.out, r.err)
    assert problem in r.err and "Traceback" not in r.err


def test_a_workload_without_torch_is_watched_for_jit_only(run, tmp_path):
    """No Python of the workload imports torch: no record; the private JIT cache is still judged, and the
    workload's own exit status comes back when it fails."""
    r = run("attest", "--seconds", "1", "--dir", str(tmp_path), "--", "python3", "-c", "print('ran')")
    assert r.code == 0, r.err
    assert "ran" in r.out
    assert "G2 SKIP: no attest record" in r.out
    assert "G7 PASS: no kernel was JIT-compiled from PTX: the private CUDA JIT cache stayed empty" in r.out
    failed = run(
        "attest", "--seconds", "1", "--dir", str(tmp_path), "--", "python3", "-c", "raise SystemExit(5)"
    )
    assert failed.code == 5

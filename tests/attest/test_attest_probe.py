"""The probe in a real workload's Python (CPU torch is enough: the window, its hard end, the record and
the chaining are the same code on a GPU): the window ends on time even in a workload that ignores
signals, the profiler is off and the workload goes on after it, --steps ends it at the N-th optimizer
step, a killed workload leaves a readable partial record, another sitecustomize still runs, and
`gate --attest` reports beside the exec'd workload."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
from multinode_helpers import torch_python

from sparkenv.attest import launch, record

pytestmark = pytest.mark.torch

IGNORES_SIGNALS = """
import signal, sys, time
for s in (signal.SIGTERM, signal.SIGINT, signal.SIGUSR1, signal.SIGALRM):
    signal.signal(s, signal.SIG_IGN)
import torch
m = torch.nn.Linear(64, 64)
t0 = time.monotonic()
while time.monotonic() - t0 < {seconds}:
    m(torch.randn(8, 64)).relu().sum()
print("profiler on at the end:", torch.autograd._profiler_enabled(), flush=True)
print("workload done", flush=True)
"""

TRAINS = """
import torch
m = torch.nn.Linear(16, 16)
opt = torch.optim.SGD(m.parameters(), lr=0.1)
for step in range(40):
    m(torch.randn(4, 16)).square().mean().backward()
    opt.step()
    opt.zero_grad()
print("trained", flush=True)
"""


def _cli(*args: str, cwd: Path, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    full = {**os.environ, **(env or {})}
    full["PYTHONPATH"] = str(Path(__file__).resolve().parents[2])
    return subprocess.run(
        [sys.executable, "-m", "sparkenv", *args],
        cwd=cwd,
        env=full,
        capture_output=True,
        text=True,
        timeout=240,
    )


def _records(folder: Path) -> list[record.ProcessRecord]:
    return [record.read(p) for p in sorted(str(p) for p in folder.rglob("attest-*.jsonl"))]


def test_the_window_ends_on_time_in_a_workload_that_ignores_signals(tmp_path):
    python = torch_python()
    (tmp_path / "w.py").write_text(IGNORES_SIGNALS.format(seconds=8))
    r = _cli("attest", "--seconds", "2", "--dir", "rec", "--", python, "w.py", cwd=tmp_path)
    assert r.returncode == 0, r.stderr
    (rec,) = _records(tmp_path / "rec")
    # ended by its own timer, after the 2 s asked and well before the 8 s workload's end: no fixed ceiling
    # that a loaded machine can break (the stop waits for the main thread's next bytecode)
    assert rec.finished and rec.reason == "seconds" and 2.0 <= rec.window_s < 8.0, rec
    assert any(op.name == "aten::linear" and op.count > 0 for op in rec.cpu_ops)  # recorded while it ran
    # the workload went on untouched after the window (its own last line); when the report lands beside it
    # depends on how fast the record is read on a loaded machine, so no order between the two is asked
    assert "workload done" in r.stdout and "verdict:" in r.stdout
    assert "profiler on at the end: False" in r.stdout


def test_steps_end_the_window_at_the_nth_optimizer_step(tmp_path):
    python = torch_python()
    (tmp_path / "t.py").write_text(TRAINS)
    r = _cli("attest", "--steps", "3", "--dir", "rec", "--", python, "t.py", cwd=tmp_path)
    assert r.returncode == 0, r.stderr
    (rec,) = _records(tmp_path / "rec")
    assert rec.finished and rec.reason == "steps", rec
    assert json.loads(Path(rec.path).read_text().splitlines()[-1])["steps_seen"] == 3


def test_a_killed_workload_leaves_a_readable_partial_record(tmp_path):
    python = torch_python()
    (tmp_path / "w.py").write_text(IGNORES_SIGNALS.format(seconds=60))
    env = launch.environment(os.environ, str(tmp_path / "rec"), 30.0)
    proc = subprocess.Popen([python, "w.py"], cwd=tmp_path, env=env, stdout=subprocess.DEVNULL,
                            stderr=subprocess.DEVNULL)  # fmt: skip
    try:
        deadline = time.monotonic() + 120
        while time.monotonic() < deadline:
            found = list((tmp_path / "rec").glob("attest-*.jsonl"))
            if found and '"kind":"tick"' in found[0].read_text():
                break
            time.sleep(0.2)
        else:
            pytest.fail("the probe wrote no tick")
        proc.send_signal(signal.SIGKILL)
    finally:
        proc.kill()
        proc.wait(30)
    (rec,) = _records(tmp_path / "rec")
    assert not rec.finished and rec.window_s > 0
    r = _cli("attest", "--record", str(tmp_path / "rec"), cwd=tmp_path)
    assert r.returncode == 0, r.stderr
    assert f"G7 WARN: the window did not end in pid {proc.pid}" in r.stdout


def test_another_sitecustomize_still_runs(tmp_path):
    python = torch_python()
    theirs = tmp_path / "theirs"
    theirs.mkdir()
    (theirs / "sitecustomize.py").write_text("import os\nopen(os.environ['MARK'], 'w').write('ran')\n")
    env = launch.environment({**os.environ, "PYTHONPATH": str(theirs)}, str(tmp_path / "rec"), 1.0)
    env["MARK"] = str(tmp_path / "mark")
    r = subprocess.run([python, "-c", "import torch, time; time.sleep(2)"], env=env, capture_output=True,
                       text=True, timeout=120)  # fmt: skip
    assert r.returncode == 0, r.stderr
    assert (tmp_path / "mark").read_text() == "ran"
    (rec,) = _records(tmp_path / "rec")
    assert rec.finished


def test_gate_attest_reports_beside_the_execd_workload(tmp_path):
    python = torch_python()
    (tmp_path / "w.py").write_text(IGNORES_SIGNALS.format(seconds=6))
    r = _cli("gate", "--policy", "off", "--attest", "2", "--", python, "w.py", cwd=tmp_path,
             env={"SPARKENV_ATTEST_DIR": str(tmp_path / "rec")})  # fmt: skip
    assert r.returncode == 0, r.stderr
    assert "workload done" in r.stdout and "profiler on at the end: False" in r.stdout
    (rec,) = _records(tmp_path / "rec")
    assert rec.finished and rec.reason == "seconds"
    # the follower writes to the gate's stderr, which it inherited: run() returns once it closed it too
    assert "G7 " in r.stderr and "verdict:" in r.stderr, r.stderr

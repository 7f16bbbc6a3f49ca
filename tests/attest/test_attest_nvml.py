"""NVML's record of the workload's processes (sparkenv attest for any engine, torch or not): read from the
records the H100 wrote (tests/fixtures/attest/nvml-*/), a cut record read as far as it goes, the process tree
read from /proc with real processes, the window of a workload without torch ending at its --seconds, and the
fallback paths' data naming only families and backends that exist."""

from __future__ import annotations

import os
import re
import signal
import subprocess
import sys
import time
from pathlib import Path

import attest_helpers as ah
import pytest

from sparkenv.attest import record
from sparkenv.cuda import fatbin
from sparkenv.environment import nvml
from sparkenv.environment.proctree import descendants
from sparkenv.knowledge import kernel_paths, kernels

ROOT = Path(__file__).resolve().parents[2]


def test_a_torch_free_cuda_program_as_nvml_saw_it():
    (path,) = record.gpu_use_paths(str(ah.fixture("nvml-busy")))
    use = record.read_gpu_use(path)
    assert use.finished and use.root == 652 and use.on_gpu == (652,)
    assert use.peak_mib == 1030 and use.max_sm == 98 and use.samples == 17 and use.host_pids


def test_a_cut_nvml_record_is_read_as_far_as_it_goes(tmp_path):
    lines = ah.fixture("nvml-busy/nvml-652.jsonl").read_text().splitlines(keepends=True)
    cut = tmp_path / "nvml-652.jsonl"
    cut.write_text("".join(lines[:5]) + lines[5][:20])
    use = record.read_gpu_use(str(cut))
    assert not use.finished and use.samples == 4 and use.peak_mib == 1030


def test_a_probe_record_named_as_an_nvml_one_is_one_line_and_exit_2(run, tmp_path):
    wrong = tmp_path / "nvml-1.jsonl"
    wrong.write_text(ah.fixture("ext-sass.jsonl").read_text())
    r = run("attest", "--record", str(tmp_path))
    assert r.code == 2
    assert r.err.strip() == f"sparkenv: error: {wrong}: no NVML header line: not an attest NVML record"


def test_the_process_tree_holds_children_and_grandchildren():
    child = subprocess.Popen(["sh", "-c", "sleep 30 & sleep 30 & wait"], start_new_session=True)
    try:
        deadline = time.monotonic() + 10
        while len(found := descendants(child.pid)) < 3 and time.monotonic() < deadline:
            time.sleep(0.05)
        assert child.pid in found and len(found) == 3, found
        assert os.getpid() not in found
    finally:
        os.killpg(child.pid, signal.SIGKILL)  # its own session: the shell and its two sleeps
        child.wait()


def test_a_workload_without_torch_is_reported_at_its_seconds_not_its_exit(tmp_path):
    """The workload sleeps 20 s; the report comes after --seconds 1 plus the 5 s a probe record is waited
    for, with NVML's verdict (a SKIP where this machine has no driver)."""
    env = {**os.environ, "PYTHONPATH": str(ROOT), "SPARKENV_CACHE_DIR": str(tmp_path / "cache")}
    cmd = [sys.executable, "-m", "sparkenv", "attest", "--seconds", "1", "--dir", str(tmp_path / "rec"), "--"]
    cmd += [sys.executable, "-c", "import time; time.sleep(20)"]
    t0 = time.monotonic()
    proc = subprocess.Popen(cmd, env=env, stdout=subprocess.PIPE, text=True)
    try:
        first = proc.stdout.readline()  # type: ignore[union-attr]
        reported = time.monotonic() - t0
        rest = proc.stdout.read()  # type: ignore[union-attr]
        proc.wait(timeout=60)
    finally:
        proc.kill()
        proc.wait()
    out = first + rest
    assert reported < 15, (reported, out)
    assert proc.returncode == 0, out
    assert "G2 SKIP: no attest record: no process loaded torch with the probe" in out
    if nvml.library_path() is None:
        assert "G7 SKIP: NVML could not be read (libnvidia-ml.so.1 not found" in out
    else:
        assert re.search(r"G7 WARN: the workload held no GPU memory", out), out
    (folder,) = (tmp_path / "rec").iterdir()
    (kept,) = folder.iterdir()  # NVML's record of the workload, and no probe record
    assert re.fullmatch(r"nvml-\d+\.jsonl", kept.name) and record.read_gpu_use(str(kept)).finished


def test_every_fallback_path_names_families_and_backends_that_exist():
    data = kernel_paths()
    names = {f.name for f in data.family} | {a.name for a in data.attention}
    for path in data.fallback.path:
        assert set(path.slow) <= names and set(path.faster) <= names, path.op
        assert path.gotcha in ("G2", "G7") and path.source.startswith("https://")
        assert all(re.fullmatch(r"\d+\.\d+", c) for c in path.capabilities), path.capabilities
    assert 0 < data.fallback.hot_share < 1


def test_kernel_names_stop_at_their_byte_budget():
    """The extension's cubin read with a budget smaller than its section table: said, never raised."""
    small = kernels().limits._replace(max_symbol_bytes=100)
    found = fatbin.kernel_names(str(ah.fixture("libext_sass.so")), small)
    assert not found.complete and not found.names and found.problem
    whole = fatbin.kernel_names(str(ah.fixture("libext_sass.so")))
    assert whole.complete and whole.names == {"_Z21sparkenv_attest_saxpyifPKfPf"}


@pytest.mark.parametrize("name", ["nvml-busy", "nvml-numpy", "nvml-torch-cpu"])
def test_the_nvml_records_replay_through_the_command(run, name):
    r = run("attest", "--record", str(ah.fixture(name)))
    assert r.code in (0, 1), r.err
    assert "G7 " in r.out and ("the workload used the GPU" in r.out or "held no GPU memory" in r.out)

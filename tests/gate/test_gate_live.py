"""The gate on this machine with real processes: a torch that crashes, hangs or is missing its CUDA 12
runtime, a real server-like process, the workload exec'd with its status and signals.

No GPU here, so libnvidia-ml is either absent (the real case on this machine) or a stand-in library
compiled from tests/stubs/nvml_stub.c that returns recorded H200/GB10 readings or hangs on purpose: a
fake, said so, for what needs a GPU driver. pynvml itself is the real one."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
from pathlib import Path

import gate_helpers as gh
import pytest
from timing import assert_kept, timed

FIXTURES = Path(__file__).parents[1] / "fixtures" / "machines" / "h200"


def fake_torch(tmp_path: Path, body: str) -> dict[str, str]:
    """A real `torch` package on PYTHONPATH whose import does `body`: the probe process really crashes."""
    pkg = tmp_path / "site" / "torch"
    pkg.mkdir(parents=True)
    (pkg / "__init__.py").write_text(body)
    return {"PYTHONPATH": f"{tmp_path / 'site'}{os.pathsep}{os.environ.get('PYTHONPATH', '')}"}


def test_torch_that_segfaults_on_import(run, tmp_path):
    r = run(
        "gate",
        "--deep",
        env=fake_torch(tmp_path, "import os, signal\nos.kill(os.getpid(), signal.SIGSEGV)\n"),
    )
    assert r.line("G1", "torch").startswith("G1 FAIL: import torch was killed by SIGSEGV")
    assert r.code == 1


def test_torch_whose_cuda12_runtime_is_missing(run, tmp_path, elves):
    needs12 = elves.linked(("libcudart.so.12",))  # the stub that provides it is not on any loader path
    body = f"import ctypes\nctypes.CDLL({str(needs12)!r})\n"
    r = run("gate", env={**fake_torch(tmp_path, body), "SPARKENV_GATE_DEEP": "1"})
    line = r.line("G1", "torch")
    assert line.startswith(
        "G1 FAIL: import torch fails: OSError: libcudart.so.12: cannot open shared object file"
    )


def test_a_hanging_torch_cannot_block_the_start(run, tmp_path):
    # the same deep gate with a torch whose import returns at once: this machine's pace now
    quick = fake_torch(tmp_path / "quick", "version = None\n")
    _, baseline = timed(lambda: run("gate", "--deep", "--deadline", "3", env=quick))
    hanging = fake_torch(tmp_path, "import time\ntime.sleep(120)\n")
    r, elapsed = timed(lambda: run("gate", "--deep", "--deadline", "3", env=hanging))
    assert_kept(elapsed, promised=3, baseline=baseline, what="a deep gate whose torch import hangs")
    assert r.line("G1", "torch").startswith("G1 ERROR: import torch did not finish in time")
    assert r.code == 0  # ERROR is not FAIL; --strict would make it one


def test_a_probe_printing_garbage(run, tmp_path):
    r = run(
        "gate",
        "--deep",
        env=fake_torch(
            tmp_path, "import os, sys\nprint('{garbage')\nsys.stderr.write('boom\\n')\nos._exit(3)\n"
        ),
    )
    assert r.line("G1", "torch") == "G1 ERROR: the torch probe gave no answer: boom"


def test_no_torch_and_no_driver(run):
    r = run("gate", env={"PATH": "/usr/bin:/bin"})
    assert r.line("G1", "torch") == "G1 SKIP: torch is not installed: nothing CUDA to check"
    assert r.line("G4", "GPU").startswith("G4 SKIP: no GPU reading: libnvidia-ml.so.1 not found")
    assert "platform: no-gpu" in r.lines


@pytest.fixture(scope="module")
def nvml_lib(tmp_path_factory):
    return gh.build_nvml_stub(tmp_path_factory.mktemp("nvml"))


def nvml_env(lib: Path, scenario: str = "h200", procs: str = "") -> dict[str, str]:
    return {"LD_LIBRARY_PATH": str(lib), "STUB_NVML": scenario, "STUB_NVML_PROCS": procs}


def test_recorded_h200_readings_through_nvml(run, nvml_lib):
    r = run("gate", env=nvml_env(nvml_lib, procs="4242:100000"))
    assert r.line("G4", "drawn").startswith("G4 INFO: 39°C, 79.46 W drawn, limit 700 W")
    assert r.line("G6", "4242").startswith(
        "G6 WARN: "
    ) and "holds 100000 MiB of GPU memory (70% of the GPU)" in (r.line("G6", "4242"))
    assert "platform: generic-nvidia" in r.lines


def test_gb10_memory_not_supported_judged_against_memtotal(run, nvml_lib):
    """GB10's NVML has no memory total: another process's GPU memory is judged against MemTotal."""
    meminfo = Path("/proc/meminfo").read_text().splitlines()
    total_kb = int(next(ln for ln in meminfo if ln.startswith("MemTotal")).split()[1])
    big, small = int(total_kb / 1024 * 0.6), 512
    r = run("gate", env=nvml_env(nvml_lib, "gb10", f"4242:{big},4343:{small}"))
    assert "platform: dgx-spark" in r.lines
    assert r.line("G6", "4242").startswith("G6 WARN: ") and "of unified memory (MemTotal)" in r.line(
        "G6", "4242"
    )
    assert r.line("G6", "4343").startswith("G6 INFO: ")
    assert r.line("G4", "drawn").startswith("G4 INFO: 35°C, 11.17 W drawn, limit n/a")


def test_a_driver_call_that_hangs_cannot_block_the_start(run, nvml_lib):
    # the same gate with a driver that answers: this machine's pace now
    _, baseline = timed(lambda: run("gate", "--deadline", "2", env=nvml_env(nvml_lib, "h200")))
    r, elapsed = timed(lambda: run("gate", "--deadline", "2", env=nvml_env(nvml_lib, "hang")))
    assert_kept(elapsed, promised=2, baseline=baseline, what="a gate whose NVML init hangs")
    assert r.line("G4", "gpu").startswith(
        "G4 ERROR: gpu probe failed: did not answer within the 2 s deadline"
    )


def test_no_driver_library_is_said_not_crashed(run):
    r = run("gate", env={"LD_LIBRARY_PATH": "/nonexistent"})
    assert r.line("G4", "GPU").startswith("G4 SKIP: no GPU reading: libnvidia-ml.so.1 not found")
    assert "the GPU's own process list is unavailable" in r.line("G6", "process")


def test_a_running_server_is_found_in_proc_and_judged_by_its_cap(run, fake_vllm_server):
    near = fake_vllm_server("0.9")
    small = fake_vllm_server("0.4")
    mention = subprocess.Popen(["sh", "-c", "sleep 30; echo vllm serve --gpu-memory-utilization 0.99"])
    try:
        r = run("gate")
        assert r.line("G6", f"pid {near.pid}").startswith(
            f"G6 WARN: vLLM (pid {near.pid}) is near capacity with --gpu-memory-utilization 0.9"
        )
        assert r.line("G6", f"pid {small.pid}").startswith(f"G6 PASS: vLLM (pid {small.pid}) capped at")
        assert f"pid {mention.pid}" not in r.out  # a shell that only mentions vllm is not a server
    finally:
        mention.kill()
        mention.wait()


def test_dumped_facts_replay_to_the_same_lines(run, tmp_path):
    dump = tmp_path / "facts.json"
    live = run("gate", "--dump-facts", str(dump))
    replay = run("gate", "--facts", str(dump))
    assert live.out == replay.out and live.code == replay.code


def test_the_workload_owns_exit_status_stdout_and_signals(run, tmp_path):
    r = run("gate", "-q", "--", "sh", "-c", "echo workload-out; exit 7")
    assert r.code == 7 and r.out == "workload-out\n"  # the G-lines went to stderr
    assert "verdict:" in r.err
    killed = subprocess.run(
        [sys.executable, "-m", "sparkenv", "gate", "-q", "--", "sh", "-c", "kill -KILL $$"],
        capture_output=True,
        timeout=60,
    )
    assert killed.returncode == -signal.SIGKILL
    code = (
        "import signal,sys,time\n"
        "signal.signal(signal.SIGTERM, lambda *a: (print('got TERM', flush=True), sys.exit(42)))\n"
        "print('ready', flush=True)\ntime.sleep(60)\n"
    )
    p = subprocess.Popen(
        [sys.executable, "-m", "sparkenv", "gate", "-q", "--", sys.executable, "-c", code],
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
        text=True,
    )
    assert p.stdout.readline().strip() == "ready"
    p.send_signal(signal.SIGTERM)  # sent to the PID we started: after exec it is the workload itself
    assert p.stdout.readline().strip() == "got TERM"
    assert p.wait(timeout=30) == 42


def test_policy_strict_stops_a_failing_start(run, tmp_path):
    facts = gh.live()
    facts["torch"]["stages"]["imported"]["cuda"] = "12.8"
    path = gh.write(tmp_path, facts)
    marker = tmp_path / "started"
    r = run("gate", "--facts", path, "--policy", "strict", "--", "touch", str(marker))
    assert r.code == 1 and not marker.exists()
    assert "start blocked by 1 FAIL (policy strict)" in r.err and "SPARKENV_GATE=warn" in r.err
    r = run("gate", "--facts", path, "--", "touch", str(marker), env={"SPARKENV_GATE": "strict"})
    assert r.code == 1 and not marker.exists()
    r = run("gate", "--facts", path, "--", "touch", str(marker), env={"SPARKENV_GATE": "warn"})
    assert r.code == 0 and marker.exists()  # warn: reported, started anyway


def test_policy_off_starts_at_once_and_missing_commands(run, tmp_path):
    r = run("gate", "--policy", "off", "--", "sh", "-c", "echo hi")
    assert r.out == "hi\n" and r.err == "" and r.code == 0
    r = run("gate", "-q", "--", "no-such-command-here")
    assert r.code == 127 and "cannot start no-such-command-here" in r.err


def test_the_probe_reads_the_override_where_sparkenv_itself_is_not_importable(run, tmp_path):
    """As in a built image: the workload's Python has the override's .pth and hook module, not sparkenv."""
    prefix = tmp_path / "venv"
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(prefix)], check=True, timeout=120)
    assert run("patch", "sdpa", "--install", str(prefix)).code == 0
    python = str(prefix / "bin" / "python")
    assert subprocess.run([python, "-I", "-c", "import sparkenv"], capture_output=True, timeout=60).returncode
    script = Path(__file__).resolve().parents[2] / "sparkenv" / "gate" / "torch_probe.py"
    code = (
        "import json, runpy\n"
        f"ns = runpy.run_path({str(script)!r})\n"
        "args = ['--sdpa-module=_sparkenv_sdpa', '--sdpa-pth=sparkenv-sdpa.pth']\n"
        "print(json.dumps(ns['_sdpa_status'](args)))\n"
    )
    out = subprocess.run([python, "-I", "-c", code], capture_output=True, text=True, timeout=60)
    assert out.returncode == 0, out.stderr
    status = json.loads(out.stdout)
    assert status["installed"] is True and status["active"] is True, status

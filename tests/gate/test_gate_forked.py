"""The gate's slow probes run in children forked at its start (sparkenv/core/pool.py, gate/early.py):
real forks, real signals. A child's answer is the probe's own (its value, or its error under the same
class name); a child past the deadline, or alive when a signal comes, is killed; the workload never
inherits one; and the facts the children read are the facts the gate reads in its own threads."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pytest
from timing import assert_kept, timed

from sparkenv.core import children, pool
from sparkenv.gate import early, probes


def _gone(pid: int) -> bool:
    """Neither running nor a zombie nobody reaped."""
    return not os.path.exists(f"/proc/{pid}")


def _crash() -> None:
    os.kill(os.getpid(), signal.SIGKILL)


def _refuse() -> None:
    raise ValueError("bad value in /proc/x")


def test_a_forked_probe_answers_with_its_value_or_its_own_error():
    deadline = time.monotonic() + 10
    value = {"gpus": [{"name": "H200", "memory.total": 143771}], "n": (1, 2.5, None)}
    assert pool.once(lambda: value).result(deadline) == value
    failing = pool.once(_refuse)
    with pytest.raises(Exception) as caught:
        failing.result(deadline)
    # the probe's ERROR line reads as when it ran in the gate's own thread
    assert f"{caught.value.__class__.__name__}: {caught.value}" == "ValueError: bad value in /proc/x"
    pool.reap_all()  # as before the exec of the workload
    assert _gone(failing.pid)


def test_a_forked_probe_that_dies_is_an_error_naming_the_signal():
    with pytest.raises(pool.Failed, match=r"ended without an answer \(killed by SIGKILL\)"):
        pool.once(_crash).result(time.monotonic() + 10)


def test_a_forked_probe_past_the_deadline_is_killed_and_reaped():
    # the same fork, answer and reap for a probe that answers at once: this machine's pace now
    _, baseline = timed(lambda: pool.once(lambda: None).result(time.monotonic() + 60))
    child = pool.once(lambda: time.sleep(60))
    answer, elapsed = timed(lambda: child.result(time.monotonic() + 0.3))
    assert answer is None  # late: the gate reports it as not answering
    # killed, not waited for: a child that ran its 60 s would have ended by itself with status 0
    assert child.returncode == -signal.SIGKILL and _gone(child.pid), child.returncode
    assert_kept(elapsed, promised=0.3, baseline=baseline, what="a forked probe past its 0.3 s deadline")


def test_a_signal_to_the_gate_kills_its_forked_probes():
    """What the gate's handlers call on SIGTERM/SIGINT/SIGHUP (children.kill_all) reaches the child."""
    child = pool.once(lambda: time.sleep(60))
    assert os.getpgid(child.pid) == child.pid  # a group of its own, as every child sparkenv starts
    assert children.kill_all() >= 1
    assert child.returncode == -signal.SIGKILL and _gone(child.pid)


def test_a_real_gate_under_sigterm_leaves_no_forked_probe(tmp_path):
    """The gate as the entrypoint runs it, stopped by SIGTERM at moments spread over its start (before
    its handler: -15, nothing forked yet; while its children probe: 143; after: the workload ran, 0):
    no process carrying its command line is left behind."""
    codes = set()
    for delay in (0.02, 0.04, 0.06, 0.08, 0.1, 0.13, 0.16, 0.2):
        marker = f"sparkenv-forked-{os.getpid()}-{time.monotonic_ns()}"
        proc = subprocess.Popen(
            [sys.executable, "-m", "sparkenv", "gate", "-q", "--", sys.executable, "-c", "pass", marker],
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
            env={**os.environ, "SPARKENV_CACHE_DIR": str(tmp_path)},
        )
        time.sleep(delay)
        proc.send_signal(signal.SIGTERM)
        codes.add(proc.wait(timeout=30))
        time.sleep(0.1)
        left = []
        for entry in Path("/proc").iterdir():
            try:
                if entry.name.isdigit() and marker.encode() in (entry / "cmdline").read_bytes():
                    left.append(entry.name)
            except OSError:
                continue
        assert not left, (delay, codes)
    assert codes <= {-signal.SIGTERM, 128 + signal.SIGTERM, 0}, codes


def test_the_workload_inherits_no_child_of_the_gate(run, tmp_path):
    report = tmp_path / "children.json"
    code = textwrap.dedent(f"""
        import json, os
        me, kids = str(os.getpid()), []
        for p in filter(str.isdigit, os.listdir("/proc")):
            try:
                if open(f"/proc/{{p}}/stat").read().rsplit(")", 1)[1].split()[1] == me:
                    kids.append(p)
            except OSError:
                pass  # a process that ended meanwhile
        json.dump(kids, open({str(report)!r}, "w"))
    """)
    r = run("gate", "-q", "--", sys.executable, "-c", code, env={"SPARKENV_CACHE_DIR": str(tmp_path)})
    assert r.code == 0, r.err
    assert json.loads(report.read_text()) == []


# What the children read, against the same probes run in the gate's own threads, in one process (so
# that the interpreter, its path and the machine are the same).
SAME_FACTS = """
import json, sys
from sparkenv.gate import early, probes
opts = probes.Options(python=sys.argv[1], workload=[sys.argv[1], "-c", "pass"])
here = probes.gather(opts)
parts = [""] if sys.argv[2] == "one" else list(early.INTERPRETER_PARTS)  # one child, or one a part
for part in parts:
    key = early.interpreter_key(opts.python, False, part)
    early.start_group(key, lambda part=part: probes.interpreter_facts(opts.python, False, part))
early.start_group(early.HOST, lambda: probes.host_facts(set()))
pids = early.child_pids()
there = probes.gather(opts)
print(json.dumps({"here": here, "there": there, "pids": sorted(pids)}, default=str))
"""


@pytest.mark.parametrize("children", ["one", "parts"])
def test_the_forked_probes_read_what_the_gate_reads_itself(tmp_path, children):
    """The interpreter's probes in one child, or in one child a part (as the gate's start forks them:
    gate/early.py INTERPRETER_PARTS), read what the same probes read in the gate's own threads."""
    python = os.environ.get("SPARKENV_TEST_TORCH_PYTHON") or sys.executable
    proc = subprocess.run(
        [sys.executable, "-c", SAME_FACTS, python, children],
        capture_output=True,
        text=True,
        timeout=120,
        env={**os.environ, "SPARKENV_CACHE_DIR": str(tmp_path)},
    )
    assert proc.returncode == 0, proc.stderr
    got = json.loads(proc.stdout)
    here, there = got["here"], got["there"]
    assert len(got["pids"]) == (2 if children == "one" else 1 + len(early.INTERPRETER_PARTS))  # all forked
    for section in ("dists", "torch_static", "kernel_coverage", "driver", "container", "loader"):
        assert there[section] == here[section], section
    assert there["processes"]["servers"] == here["processes"]["servers"]
    assert not there["probe_errors"] and not here["probe_errors"]


def test_the_processes_probe_leaves_out_the_gates_own_processes(fake_vllm_server):
    """The host probe runs in a child: it is told the gate's processes (the gate, its parent, its other
    children), which carry the gate's command line and its workload's."""
    fake_server = fake_vllm_server("0.9")
    seen = {s["pid"] for s in probes.probe_processes(set())["servers"]}
    assert fake_server.pid in seen
    assert fake_server.pid not in {s["pid"] for s in probes.probe_processes({fake_server.pid})["servers"]}

"""The live checks judged by workers forked at the gate's start (sparkenv/gate/early.py CHECK_GROUPS,
gate/run.py evaluate): real forks, real signals, real exec. The findings are the one judgement's
(rules.evaluate) whichever process ran each group, and whatever became of a worker; none outlives the
gate or becomes a child of the workload."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import threading
import time

import gate_helpers as gh
import pytest

from sparkenv import rules
from sparkenv.core import pool
from sparkenv.facts.live import GateFacts
from sparkenv.gate import early, entry, run

SNAPSHOTS = sorted(p.stem for p in (gh.FIXTURES / "facts").glob("*.json"))


@pytest.fixture
def workers(monkeypatch):
    """Check workers forked here, as the gate's early start forks them; every one reaped after."""
    monkeypatch.setenv("SPARKENV_GATE_WORKERS", "1")
    # the gate forks only while it runs no thread (core/pool.py): a daemon thread an earlier test in
    # this process left finishing (a lock's head start, its readers) is waited for, as a gate never has one
    for thread in threading.enumerate():
        if thread is not threading.current_thread():
            thread.join(timeout=30)
    early.start_checks(25.0, entry._check_group)
    started = early.pending_checkers()
    assert len(started) == len(early.CHECK_GROUPS)
    yield started
    for w in started:
        w.stop()
    early.checkers()
    pool.reap_all()


def _one_process(raw: dict, need_gb: float = 0.0, strict: bool = False) -> list:
    return rules.evaluate(rules.Stage.LIVE, GateFacts(raw, need_gb, strict))


@pytest.mark.parametrize("name", SNAPSHOTS)
@pytest.mark.parametrize(("need_gb", "strict"), [(0.0, False), (500.0, True)])
def test_the_workers_judge_as_one_process_does(workers, name, need_gb, strict):
    raw = gh.live(name)
    found, facts = run.evaluate(raw, need_gb, strict, time.monotonic() + 20)
    assert found == _one_process(raw, need_gb, strict)
    assert facts.raw is raw
    for w in workers:  # each answered (none was left to the gate) and exits by itself
        assert w.returncode is not None or w in pool._exiting


def test_the_groups_cover_each_live_check_once():
    grouped = [g for group in early.CHECK_GROUPS for g in group]
    assert len(grouped) == len(set(grouped))
    assert set(grouped) <= {g.value for g in rules.GOTCHAS}


def test_a_worker_killed_or_dead_leaves_its_group_to_the_gate(workers):
    os.kill(workers[0].pid, signal.SIGKILL)  # killed before it is fed
    workers[1].stop()  # and one that died (reaped) before the facts came
    raw = gh.live()
    found, _ = run.evaluate(raw, 0.0, False, time.monotonic() + 20)
    assert found == _one_process(raw)


def test_a_worker_never_fed_leaves_when_the_gate_ends(tmp_path):
    """A gate that ends without judging (killed, an error) leaves no worker behind: each sees its pipe
    end and exits, without the gate's help."""
    code = (
        "import os, sys\n"
        "os.environ['SPARKENV_GATE_WORKERS'] = '1'\n"
        "from sparkenv.gate import early\n"
        "from sparkenv.gate import entry\n"
        "early.start_checks(60.0, entry._check_group)\n"
        "print(' '.join(str(w.pid) for w in early.pending_checkers()), flush=True)\n"
        "os._exit(0)\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60)
    pids = [int(p) for p in out.stdout.split()]
    assert len(pids) == len(early.CHECK_GROUPS), out.stderr
    end = time.monotonic() + 20
    while not all(gh.dead(p) for p in pids) and time.monotonic() < end:
        time.sleep(0.05)
    assert all(gh.dead(p) for p in pids)


WORKLOAD = """import json, os, sys
kids = []
for task in os.listdir("/proc/self/task"):
    kids += open(f"/proc/self/task/{task}/children").read().split()
fds = sorted(int(fd) for fd in os.listdir("/proc/self/fd"))
print(json.dumps({"pid": os.getpid(), "children": kids, "fds": fds}))
"""


@pytest.mark.parametrize("policy", ["warn", "strict"])
def test_the_workload_inherits_no_child_or_pipe_of_the_gate(tmp_path, policy):
    """A real gate with its workers and probes forked, then exec: the workload (same PID) has no child
    process, zombie or not, and the descriptors it has when started alone."""
    script = tmp_path / "w.py"
    script.write_text(WORKLOAD)
    env = {k: v for k, v in os.environ.items() if k != "VIRTUAL_ENV"}
    env.update(SPARKENV_GATE_WORKERS="1", SPARKENV_CACHE_DIR=str(tmp_path / "cache"))
    alone = subprocess.run([sys.executable, str(script)], capture_output=True, text=True, env=env, timeout=60)
    argv = [
        sys.executable,
        "-m",
        "sparkenv",
        "gate",
        "-q",
        "--policy",
        policy,
        # strict on any machine: every finding judged (by the workers) but none shown, so none blocks
        *(["--ignore", ",".join(f"G{n}" for n in range(1, 11))] if policy == "strict" else []),
        "--",
        sys.executable,
        str(script),
    ]
    proc = subprocess.Popen(argv, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    out, err = proc.communicate(timeout=120)
    assert proc.returncode == 0, err
    seen = json.loads(out.strip().splitlines()[-1])
    assert seen["pid"] == proc.pid  # exec'd: the gate's PID
    assert seen["children"] == []
    assert seen["fds"] == json.loads(alone.stdout)["fds"]


def test_a_bad_workers_setting_is_one_line_and_exit_2(run):
    r = run("gate", env={"SPARKENV_GATE_WORKERS": "lots"})
    assert r.code == 2
    assert r.err.strip().splitlines() == [
        "sparkenv: error: $SPARKENV_GATE_WORKERS: 'lots' is not a boolean (use 1 or 0)"
    ]


def test_the_warm_up_knows_every_section_the_probes_give(tmp_path):
    """The workers warm their checks up on every probe's section (probes.SECTIONS): a real gather's."""
    from sparkenv.gate import probes

    facts = probes.gather(probes.Options(workload=[sys.executable, "-c", "pass"]))
    given = set(facts) - {"schema", "mode", "taken_at", "host", "env", "workload", "probe_errors", "gather_s"}
    assert given <= set(probes.SECTIONS)

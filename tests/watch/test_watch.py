"""`sparkenv gate --watch` and `sparkenv watch`, run for real: real workloads (Python processes), real
signals, a real memory eater, the record read back after SIGKILL. No GPU here: NVML is absent, so the
watcher watches memory and processes; the GPU judgements are table-driven in tests/rules/ (with the
record of a real H200 run replayed)."""

from __future__ import annotations

import json
import os
import re
import signal
import subprocess
import sys
from pathlib import Path
from typing import Any
from xml.etree import ElementTree

import pytest
from conftest import sparkenv
from timing import assert_kept, timed, wait_for

from sparkenv.watch import record

FIXTURE = Path(__file__).parents[1] / "fixtures" / "watch" / "h200-matmul-cotenant.jsonl"
ENV = {
    k: v for k, v in os.environ.items() if k not in ("VIRTUAL_ENV", "SPARKENV_GATE", "SPARKENV_GATE_WATCH")
}


def gate(
    folder: Path, workload: list[str], *opts: str, stderr: Any = subprocess.PIPE
) -> subprocess.Popen[str]:
    """`sparkenv gate --watch` in its own session (so a test can signal the gate's group alone)."""
    argv = [sys.executable, "-m", "sparkenv", "gate", "-q", "--watch", "--watch-dir", str(folder),
            "--watch-interval", "0.3", *opts, "--", *workload]  # fmt: skip
    return subprocess.Popen(
        argv, stdout=subprocess.PIPE, stderr=stderr, text=True, env=ENV, start_new_session=True
    )


def _ended(pid: int) -> bool:
    """Gone, or dead and not yet reaped: an orphan is handed to the nearest subreaper, and this test
    process is one once an earlier test in it started a child through sparkenv/core/children.py."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return True
    return stat.rsplit(")", 1)[1].split()[0] in ("Z", "X")


def workload_of(gate_pid: int, rec: Path) -> int:
    """The workload's PID, as the watcher's record names it: the gate's child (it stays as the workload's
    supervisor, sparkenv/watch/supervise.py)."""
    pid = record.read(str(rec)).header["pid"]
    stat = Path(f"/proc/{pid}/stat").read_text()
    assert int(stat.rsplit(")", 1)[1].split()[1]) == gate_pid, f"pid {pid} is not the gate's child"
    return pid


def python(code: str) -> list[str]:
    return [sys.executable, "-c", code]


def watchers(pid: int | None = None, folder: Path | None = None) -> list[int]:
    """PIDs of the watchers of `pid`, or of those writing into `folder` (their command line names it)."""
    found = []
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            try:
                argv = Path(f"/proc/{entry}/cmdline").read_bytes().split(b"\0")
            except OSError:
                continue
            named = str(pid).encode() in argv if folder is None else str(folder).encode() in argv
            if b"watch" in argv and b"--pid" in argv and named:
                found.append(int(entry))
    return found


def the_record(folder: Path) -> Path:
    wait_for(
        lambda: folder.is_dir() and len(list(folder.glob("*.jsonl"))) == 1,
        timeout=30,
        what=f"one watch record (*.jsonl) in {folder}",
    )
    return next(folder.glob("*.jsonl"))


def samples(path: Path) -> int:
    return sum(1 for ln in path.read_text().splitlines() if ln.startswith('{"t":'))


def test_exit_status_passes_through_and_the_watcher_ends_with_the_workload(tmp_path):
    proc = gate(tmp_path / "w", python("import time; time.sleep(2.5); raise SystemExit(7)"))
    rec = the_record(tmp_path / "w")
    wait_for(lambda: samples(rec) >= 2, timeout=30, what=f"two samples in {rec}")
    # the gate stays as the workload's parent; the watcher watches the workload, from a session of its own
    workload = workload_of(proc.pid, rec)
    assert b"raise SystemExit(7)" in Path(f"/proc/{workload}/cmdline").read_bytes()
    (watcher,) = watchers(workload)
    assert os.getsid(watcher) != os.getsid(workload) and os.getpgid(watcher) != os.getpgid(workload)
    _out, err = proc.communicate(timeout=60)
    assert proc.returncode == 7, err
    assert not watchers(workload)  # ended before the gate returned
    assert f"sparkenv watch: watching pid {workload}" in err
    assert re.search(rf"sparkenv watch: pid {workload} ended after \+0:0\d; \d+ readings", err), err
    assert record.read(str(rec)).summary is not None


def test_the_summary_is_on_disk_when_the_command_returns(tmp_path):
    """A script that runs `watch --report` right after the command finds the whole record: the gate
    returns the workload's status only once the watcher has written its summary and plot (stderr goes
    to a file, so nothing here waits for the watcher's end but the gate itself)."""
    err_file = tmp_path / "err.txt"
    # the workload ends once the watcher has started (its record is there), however loaded this machine
    code = (
        f"import glob, time\nwhile not glob.glob({str(tmp_path / 'w')!r} + '/*.jsonl'):\n"
        "    time.sleep(0.05)\ntime.sleep(0.5)\nraise SystemExit(5)\n"
    )
    with err_file.open("w") as err:
        proc = gate(tmp_path / "w", python(code), stderr=err)
        assert proc.wait(timeout=60) == 5, err_file.read_text()
    assert not watchers(folder=tmp_path / "w"), "the watcher still runs after the gate returned"
    rec = next((tmp_path / "w").glob("*.jsonl"))  # read at once: no waiting after the gate returned
    read = record.read(str(rec))
    assert read.summary is not None, err_file.read_text()
    assert f"sparkenv watch: pid {read.header['pid']} ended after" in err_file.read_text()
    svg = ElementTree.parse(rec.with_suffix(".svg")).getroot()
    assert svg.tag.endswith("svg")
    # a watcher that cannot finish (stopped, as a stuck one would be) holds the status at most FINISH_S
    # longer than the same gate whose watcher finishes, timed here first
    from sparkenv.watch.supervise import FINISH_S

    def after_go(folder: Path, *, stuck: bool) -> float:
        """Seconds from the workload's go to the gate's return; its watcher stopped first if `stuck`."""
        go = folder.with_name(f"{folder.name}.go")
        code = f"import os, time\nwhile not os.path.exists({str(go)!r}):\n    time.sleep(0.05)\n"
        proc = gate(folder, python(code))
        wait_for(lambda: samples(the_record(folder)) >= 1, timeout=30, what=f"a first sample in {folder}")
        (watcher,) = watchers(folder=folder)
        if stuck:
            os.kill(watcher, signal.SIGSTOP)
        try:
            go.touch()
            status, took = timed(lambda: proc.wait(timeout=60))
            assert status == 0
        finally:
            if stuck:
                os.kill(watcher, signal.SIGCONT)
        wait_for(lambda: not watchers(folder=folder), timeout=30, what=f"the end of {folder}'s watcher")
        proc.communicate(timeout=30)
        return took

    baseline = after_go(tmp_path / "w3", stuck=False)
    elapsed = after_go(tmp_path / "w2", stuck=True)
    assert_kept(elapsed, promised=FINISH_S, baseline=baseline, what="a gate whose watcher is stuck")


def test_signals_reach_the_workload_alone_and_its_status_is_its_own(tmp_path):
    """SIGTERM to the workload's whole process group: the workload's handler runs and sets the exit
    status; the watcher, in its own session, is not hit, sees the end and writes its summary."""
    code = (
        "import signal, sys, time\n"
        "signal.signal(signal.SIGTERM, lambda *a: (print('got TERM', flush=True), sys.exit(42)))\n"
        "time.sleep(60)\n"
    )
    proc = gate(tmp_path / "w", python(code))
    rec = the_record(tmp_path / "w")
    wait_for(lambda: samples(rec) >= 2, timeout=30, what=f"two samples in {rec}")
    # the gate's whole group: the workload's handler runs once (the gate passes the signal on), and the
    # watcher, in its own session, is not hit and writes its summary
    os.killpg(proc.pid, signal.SIGTERM)
    out, _err = proc.communicate(timeout=30)
    assert (proc.returncode, out.strip()) == (42, "got TERM")
    assert record.read(str(rec)).summary is not None, "no summary: was the watcher hit by the signal?"
    # a workload killed by a signal it does not handle ends the gate by that signal, as without the gate
    proc = gate(tmp_path / "w3", python("import os, signal, time; time.sleep(1); os.kill(os.getpid(), 15)"))
    proc.communicate(timeout=60)
    assert proc.returncode == -signal.SIGTERM
    assert record.read(str(the_record(tmp_path / "w3"))).summary is not None
    # SIGKILL, which the gate cannot pass on, kills the workload with it (parent-death signal)
    proc = gate(tmp_path / "w2", ["sleep", "60"])
    rec = the_record(tmp_path / "w2")
    wait_for(lambda: samples(rec) >= 1, timeout=30, what="a first sample of w2")
    workload = workload_of(proc.pid, rec)
    os.kill(proc.pid, signal.SIGKILL)
    proc.communicate(timeout=30)
    assert proc.returncode == -signal.SIGKILL
    wait_for(lambda: _ended(workload), timeout=10, what="the workload's end")
    wait_for(lambda: not watchers(workload), timeout=10, what="the watcher's end after the workload's")


def test_the_record_survives_sigkill_of_every_process_group(tmp_path):
    """The workload's group and the watcher's killed at once (nothing gets to clean up, as at a power
    loss): the record reads back to its last sample, and the report says the run ended without one."""
    proc = gate(tmp_path / "w", ["sleep", "60"])
    rec = the_record(tmp_path / "w")
    wait_for(lambda: samples(rec) >= 5, timeout=30, what=f"five samples in {rec}")
    workload = workload_of(proc.pid, rec)
    (watcher,) = watchers(workload)
    for group in {os.getpgid(proc.pid), os.getpgid(workload), os.getpgid(watcher)}:
        os.killpg(group, signal.SIGKILL)
    proc.communicate(timeout=30)
    wait_for(lambda: not watchers(workload), timeout=10, what="the watcher's end after the workload's")
    read = record.read(str(rec))
    assert read.summary is None and len(read.samples) >= 5 and read.header["pid"] == workload
    last_line = json.loads(rec.read_text().splitlines()[-1])
    assert read.samples[-1].t == last_line["t"]
    r = sparkenv("watch", "--report", str(rec))
    assert r.code == 0, r.err
    assert f"pid {workload} (sleep 60)" in r.out
    assert re.search(r"ended: the record stops at \+0:0\d \(.* UTC\) with no summary", r.out), r.out
    assert "G3 PASS" in r.out
    # a last line cut mid-write (the power went) is skipped, and said
    with rec.open("a") as fh:
        fh.write('{"t": 99.5, "wall": 17961')
    r = sparkenv("watch", "--report", str(rec))
    assert r.code == 0 and "1 line(s) cut short" in r.out, r.out


def _eater(seconds: float, cap_gib: float, log: Path) -> tuple[list[str], float]:
    """A bounded memory eater: a fifth of MemAvailable (at most cap_gib) over `seconds`, pages touched,
    then held a moment; after each chunk it appends "<monotonic seconds> <bytes held>" to `log`, so
    its real pace on this machine (slower under load than planned) is known. Returns its argv and the
    seconds to exhaustion its planned pace implies at the start."""
    from sparkenv.watch.sampler import meminfo

    avail = meminfo()["MemAvailable"] * 1024
    total = min(avail / 5, cap_gib * 2**30)
    chunk = 64 << 20
    n = max(1, int(total // chunk))
    code = (
        f"import time\nheld = []\nlog = open({str(log)!r}, 'w', buffering=1)\n"
        f"for _ in range({n}):\n"
        f"    held.append(b'\\x01' * {chunk})\n"
        f"    log.write(f'{{time.monotonic()}} {{len(held) * {chunk}}}\\n')\n"
        f"    time.sleep({seconds / n:.4f})\n"
        "time.sleep(1.5)\n"
    )
    return python(code), avail / (n * chunk / seconds)


def _paces(log: Path) -> tuple[float, float]:
    """The eater's own pace in MiB/s from its log: its average over all it ate, and its fastest over any
    stretch of at least a second (a loaded machine makes it uneven: a trend over part of the run can
    see the fast part)."""
    points = [tuple(map(float, ln.split())) for ln in log.read_text().splitlines() if ln.count(" ") == 1]
    assert len(points) >= 2, f"the eater logged {len(points)} chunk(s) in {log}: it did not eat"
    (t0, b0), (t1, b1) = points[0], points[-1]
    stretches = [
        (b - a) / (u - t) for i, (t, a) in enumerate(points) for u, b in points[i + 1 :] if u - t >= 1
    ]
    mib = 2**20
    return (b1 - b0) / (t1 - t0) / mib, max(stretches, default=(b1 - b0) / (t1 - t0)) / mib


def _eaten(folder: Path, *opts: str) -> tuple[subprocess.Popen[str], str, tuple[float, float]]:
    """The eater under `gate --watch`, and its own paces (MiB/s: average, fastest). MemAvailable is the
    whole machine's: on a shared machine another process freeing gigabytes during those 12 s can hide the
    eater's fall (seen once: 19.0 → 20.4 GiB while 3.8 GiB were eaten), so a run with no G3 fall at all
    is tried once more."""
    for attempt in (1, 2):
        log = folder / f"eater{attempt}.log"
        folder.mkdir(parents=True, exist_ok=True)
        argv, _eta = _eater(12.0, 6.0, log)
        proc = gate(folder / f"try{attempt}", argv, *opts)
        _out, err = proc.communicate(timeout=120)
        if "exhausted in ~" in err:
            break
    return proc, err, _paces(log)


def test_memory_eaten_fast_is_g3_with_a_time_to_exhaustion(tmp_path):
    proc, err, (average, fastest) = _eaten(tmp_path)
    assert proc.returncode == 0, err
    line = next((ln for ln in err.splitlines() if ln.startswith("G3 ") and "exhausted in" in ln), None)
    assert line, err
    m = re.match(r"G3 (?:WARN|FAIL): \+0:\d\d MemAvailable ([\d.]+) GiB of [\d.]+ GiB, falling (\d+) MiB/s: "
                 r"exhausted in ~(\d+) s at this rate; free memory now", line)  # fmt: skip
    assert m, line
    avail_gib, rate, seconds = float(m.group(1)), int(m.group(2)), int(m.group(3))
    assert abs(seconds - avail_gib * 1024 / rate) <= 0.05 * seconds + 2, line  # the estimate is what it says
    # the fall measured is the eater's own pace as it logged it on this machine (slower than planned
    # under load), give or take what other processes on the machine do meanwhile
    said = f"{line}: the eater itself logged {average:.0f} MiB/s on average, {fastest:.0f} at its fastest"
    assert 0.25 * average < rate < 2 * fastest, said
    workload = record.read(str(_last_record(tmp_path))).header["pid"]
    during = err.split(f"sparkenv watch: pid {workload} ended after", 1)[0]
    # said once, and again only when it got worse (WARN, then FAIL): no line at every reading
    said = [ln.split(":", 1)[0] for ln in during.splitlines() if ln.startswith("G3 ") and "exhausted" in ln]
    assert said in (["G3 WARN"], ["G3 FAIL"], ["G3 WARN", "G3 FAIL"]), during


def test_watch_policy_stop_sends_sigterm_before_predicted_exhaustion(tmp_path):
    if _eater(12.0, 6.0, tmp_path / "planned.log")[1] > 100:
        pytest.skip("this machine has too much memory for a bounded eater to predict exhaustion in 100 s")
    proc, err, _ = _eaten(tmp_path, "--watch-policy", "stop")
    assert proc.returncode == -signal.SIGTERM, err
    rec = record.read(str(_last_record(tmp_path)))
    said = re.search(
        rf"sparkenv watch: sent SIGTERM to pid {rec.header['pid']} \(--watch-policy stop\) because G3 FAIL: "
        r"MemAvailable .* exhausted in ~\d+ s",
        err,
    )
    assert said, err
    assert rec.summary and rec.summary["stopped_workload"].startswith("G3 memory exhaustion")


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["--watch"], "--watch watches a workload: give it after --"),
        (
            ["--watch", "--watch-policy", "kill", "--", "true"],
            "--watch-policy: 'kill' is not one of report, stop",
        ),
        (["--watch", "--watch-interval", "0", "--", "true"], "--watch-interval: 0 s is outside 0.2 … 3600"),
        (["--watch", "--watch-interval", "nan", "--", "true"], "--watch-interval: nan s is outside"),
    ],
)
def test_bad_watch_options_are_one_line_and_start_nothing(tmp_path, args, message):
    r = sparkenv("gate", "--policy", "off", *args, cwd=tmp_path)
    assert r.code == 2 and r.err.startswith(f"sparkenv: error: {message}") and len(r.err.splitlines()) == 1, (
        r.err
    )
    assert not (tmp_path / "sparkenv-watch").exists() or not list((tmp_path / "sparkenv-watch").iterdir())


def test_an_unwritable_watch_folder_is_refused_before_the_workload_starts(tmp_path):
    blocker = tmp_path / "a-file"
    blocker.write_text("")
    marker = tmp_path / "started"
    r = sparkenv("gate", "--policy", "off", "--watch", "--watch-dir", str(blocker / "sub"), "--",
                 "touch", str(marker))  # fmt: skip
    assert r.code == 2 and r.err.startswith(
        f"sparkenv: error: --watch-dir {blocker / 'sub'}: cannot create it"
    )
    assert not marker.exists()


def test_watch_pid_follows_a_running_process_and_writes_metrics_and_plot(tmp_path):
    target = subprocess.Popen(["sleep", "300"])
    folder = tmp_path / "w"
    watch = subprocess.Popen(
        [sys.executable, "-m", "sparkenv", "watch", "--pid", str(target.pid), "--dir", str(folder),
         "--interval", "0.3"], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=ENV,
    )  # fmt: skip
    try:  # the target ends once the watcher has sampled it five times, however slow this machine is now
        wait_for(lambda: samples(the_record(folder)) >= 5, timeout=60, what="five samples of the target")
    finally:
        target.kill()
        target.wait(timeout=10)
    _out, err = watch.communicate(timeout=60)
    assert watch.returncode == 0, err
    assert f"sparkenv watch: pid {target.pid} ended after" in err
    rec = record.read(str(next(folder.glob("*.jsonl"))))
    assert rec.header["workload"] == ["sleep", "300"] and rec.summary and len(rec.samples) >= 5
    assert rec.summary["watcher_cpu_share"] < 0.2  # a loose bound; benchmarks/watch_overhead.py measures
    # fsync at a bounded rate (at most every 10 s, data/watch.toml): the header, maybe one reading, the
    # summary — not one per reading
    assert rec.summary["fsyncs"] <= 3 < len(rec.samples)
    prom = (folder / "sparkenv_watch.prom").read_text()
    assert prom.endswith("# EOF\n")
    families = set()
    for ln in prom.splitlines()[:-1]:
        if ln.startswith("# "):
            kind, name = ln.split()[1:3]
            assert kind in ("HELP", "TYPE") and name.startswith("sparkenv_watch_"), ln
            families.add(name)
        else:
            assert re.fullmatch(
                r"(sparkenv_watch_[a-z0-9_]+)(\{[a-z]+=\"[^\"]*\"(,[a-z]+=\"[^\"]*\")*\})? -?[\d.e+-]+", ln
            ), ln
            assert re.match(r"[a-z0-9_]+", ln)[0] in families, ln  # type: ignore[index]
    avail = next(ln for ln in prom.splitlines() if ln.startswith("sparkenv_watch_memory_available_bytes "))
    assert int(avail.split()[1]) == rec.samples[-1].mem_available_kb * 1024  # type: ignore[operator]
    svg = ElementTree.parse(next(folder.glob("*.svg"))).getroot()
    assert svg.tag.endswith("svg") and svg.findall(".//{http://www.w3.org/2000/svg}polyline")
    r = sparkenv("watch", "--pid", str(target.pid), "--dir", str(folder))
    assert r.code == 2 and r.err == f"sparkenv: error: --pid {target.pid}: no such process\n"


def test_report_of_the_h200_record_and_its_plot(tmp_path):
    """The record the watcher wrote on a real H200 (bf16 matmul loop, a co-tenant started mid-run)."""
    plot = tmp_path / "run.svg"
    r = sparkenv("watch", "--report", str(FIXTURE), "--plot", str(plot))
    assert r.code == 0, r.err
    assert "GPU NVIDIA H200" in r.out and "ended: the workload ended at +1:09" in r.out
    said = r.out.split("said during the run:\n", 1)[1].split("judged over", 1)[0]
    assert "G6 WARN: +0:24 a new GPU process python3 (pid 890) appeared at +0:24 holding 8906 MiB" in said
    assert "G4 WARN: +0:24 power pinned at the 700 W cap" in said
    svg = ElementTree.parse(plot).getroot()
    ns = "{http://www.w3.org/2000/svg}"
    titles = [t.text or "" for t in svg.iter(f"{ns}title")]
    assert any(t.startswith("G6 WARN: +0:24") for t in titles)  # the event is marked on the plot
    assert len(svg.findall(f".//{ns}polyline")) == 5  # power, its limit, temperature, SM clock, MemAvailable


def test_report_of_what_is_not_a_record(tmp_path):
    r = sparkenv("watch", "--report", str(tmp_path / "missing.jsonl"))
    assert r.code == 2 and r.err.startswith("sparkenv: error: ") and "missing.jsonl" in r.err
    other = tmp_path / "other.jsonl"
    other.write_text('{"schema": "something else"}\n')
    r = sparkenv("watch", "--report", str(other))
    assert r.code == 2 and "not a sparkenv watch record" in r.err and len(r.err.splitlines()) == 1
    r = sparkenv("watch", "--report", str(FIXTURE), "--pid", "1")
    assert r.code == 2 and "give one of --pid" in r.err


def test_a_long_run_keeps_bounded_memory_and_its_first_reading(tmp_path):
    """A day at one reading a second through the watcher's history: the last window whole, older readings
    thinned, the first kept (G6 compares with it)."""
    from sparkenv.facts.timeseries import Sample
    from sparkenv.watch import loop

    w = loop.Watcher(loop.Options(pid=os.getpid(), folder=str(tmp_path), interval_s=1.0))
    for i in range(86_400):
        w.keep(Sample(t=float(i), wall=0.0, mem_available_kb=i))
    kept = w.history
    assert kept[0].t == 0.0 and kept[-1].t == 86_399.0
    assert len(kept) <= 1 + 2 * loop.HISTORY + 2 * w.w.sampling.window_s + 1
    recent = [s.t for s in kept if s.t >= 86_399 - w.w.sampling.window_s]
    assert recent == [float(t) for t in range(86_399 - int(w.w.sampling.window_s), 86_400)]
    w.recorder.close()


def _last_record(root: Path) -> Path:
    return sorted(root.glob("try*/*.jsonl"))[-1]

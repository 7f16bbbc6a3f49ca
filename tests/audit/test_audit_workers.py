"""A first audit reads metadata and shared objects in forked worker processes (core/pool.py). It
must say exactly what an audit in one process says, with real nvcc- and gcc-built objects, damaged and
missing ones included; a worker that dies or hangs leaves its objects to the audit's own process (never
a silent PASS); a SIGTERM or SIGINT to a real `sparkenv audit` kills every worker.

The faults (a worker killed mid-read, a worker that hangs) are injected by wrapping the worker's read
function: a real worker process gets a real SIGKILL or sleeps, which no real file can make it do."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
from artifacts import default_dispositions

from sparkenv.audit import run as audit_run
from sparkenv.audit import scan
from sparkenv.core import pool
from sparkenv.cuda import fatbin

ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture
def venv(env, kernels, elves, tmp_path):  # type: ignore[no-untyped-def]
    objects = {
        "fat": kernels.so("fat"),
        "sm90": kernels.so("sm90"),
        "ptx90": kernels.so("ptx90"),
        "cufft_layout": kernels.with_section(
            kernels.so("sm75"), ".ldata", kernels.fatbin("fat"), "wcufft", 4
        ),
        "plain": kernels.plain(),
        "stub": elves.stub("libwork.so.1"),
        "linked": elves.linked(("libwork.so.1", "libmissing.so.3")),
        "aarch64": elves.linked(("libwork.so.1",), arch="aarch64"),
    }
    for i, (name, path) in enumerate(objects.items()):
        env.add(f"ext-{name.replace('_', '-')}", f"1.{i}", files={f"ext_{name}/_C.abi3.so": path})
    cut = tmp_path / "cut.so"
    cut.write_bytes(objects["fat"].read_bytes()[:3000])  # a damaged object: the ELF reader's defect
    env.add(
        "torch",
        "2.11.0",
        requires=["numpy>=3", "ext-fat==9; python_version >= '3'", "ext-stub[x]"],
        files={"torch/lib/libtorch_cuda.so": objects["fat"], "torch/lib/cut.so": cut, "torch/t.py": "x"},
    )
    env.add("ghost", "1.0", files={"ghost/libghost.so": objects["stub"]})
    (env.site / "ghost" / "libghost.so").unlink()  # listed in RECORD but missing
    return env


def _report(prefix: Path, gpu: object, workers: int, tmp: Path, monkeypatch) -> tuple[list[tuple], dict]:  # type: ignore[no-untyped-def]
    monkeypatch.setenv("SPARKENV_AUDIT_WORKERS", str(workers))
    monkeypatch.setenv("SPARKENV_CACHE_DIR", str(tmp / f"cache-{workers}-{time.monotonic_ns()}"))
    report = audit_run.audit(str(prefix), gpu=gpu)
    findings = [(f.id, f.status, f.summary, f.subject, f.evidence, f.fix) for f in report.findings]
    context = {k: v for k, v in report.context.items() if k not in ("seconds", "cache")}
    return findings, context


def _answers(monkeypatch) -> list[str]:  # type: ignore[no-untyped-def]
    """The tasks a worker answered, as the audit's process takes them."""
    answered: list[str] = []
    answer = pool.Pool.answer

    def counted(self, task):  # type: ignore[no-untyped-def]
        got = answer(self, task)
        if got is not None:
            answered.append(task)
        return got

    monkeypatch.setattr(pool.Pool, "answer", counted)
    return answered


@pytest.mark.parametrize("gpu", ["default", (9, 0), None])
def test_workers_say_what_one_process_says(venv, tmp_path, monkeypatch, gpu):
    answered = _answers(monkeypatch)
    alone = _report(venv.prefix, gpu, 0, tmp_path, monkeypatch)
    assert answered == []
    for workers in (1, 3):
        assert _report(venv.prefix, gpu, workers, tmp_path, monkeypatch) == alone
        # the workers read the metadata folders and every shared object (not silently the parent)
        assert any("\0" in task for task in answered)
        assert any(task.endswith("libtorch_cuda.so") for task in answered)
        answered.clear()
    findings = alone[0]
    assert any("missing" in " ".join(map(str, f)) for f in findings)  # the ghost's object
    if gpu is not None:
        assert any(f[0].value == "G7" for f in findings)
    assert not _workers_alive()


def test_a_memo_audit_after_a_change_reads_the_changed_part_in_workers(venv, tmp_path, monkeypatch):
    monkeypatch.setenv("SPARKENV_CACHE_DIR", str(tmp_path / "kept"))
    monkeypatch.setenv("SPARKENV_AUDIT_WORKERS", "2")
    audit_run.audit(str(venv.prefix))
    venv.add(
        "late",
        "1.0",
        requires=["nothing-here"],
        files={"late/libl.so": (venv.site / "torch/lib/libtorch_cuda.so")},
    )
    answered = _answers(monkeypatch)
    changed = audit_run.audit(str(venv.prefix))
    assert changed.context["cache"] == "miss"
    assert any(task.endswith("libl.so") for task in answered)
    assert not any(task.endswith("libtorch_cuda.so") for task in answered)  # known to the memo
    monkeypatch.setenv("SPARKENV_AUDIT_WORKERS", "0")
    monkeypatch.setenv("SPARKENV_CACHE_DIR", str(tmp_path / "fresh"))
    fresh = audit_run.audit(str(venv.prefix))
    assert [(f.id, f.status, f.summary, f.evidence) for f in changed.findings] == [
        (f.id, f.status, f.summary, f.evidence) for f in fresh.findings
    ]


@pytest.mark.parametrize("fault", ["killed", "hangs", "raises"])
def test_a_worker_that_fails_leaves_its_objects_to_the_audit(venv, tmp_path, monkeypatch, fault):
    alone = _report(venv.prefix, "default", 0, tmp_path, monkeypatch)
    read = scan.read_ahead

    def faulty(task, cap):  # type: ignore[no-untyped-def]
        if task.endswith(("libtorch_cuda.so", "ext_fat/_C.abi3.so")):
            if fault == "killed":
                os.kill(os.getpid(), signal.SIGKILL)
            elif fault == "hangs":
                time.sleep(600)
            else:
                raise RuntimeError("a reader bug")
        return read(task, cap)

    monkeypatch.setattr(scan, "read_ahead", faulty)
    monkeypatch.setattr(scan, "TIMEOUT_S", 2.0)  # a hung worker dies by its alarm after this
    answered = _answers(monkeypatch)
    assert _report(venv.prefix, "default", 2, tmp_path, monkeypatch) == alone
    assert not any(task.endswith("libtorch_cuda.so") for task in answered)
    # the objects the faulty workers never answered are judged all the same: G7 names them
    g7 = " ".join(" ".join(map(str, f)) for f in alone[0] if f[0].value == "G7")
    assert "libtorch_cuda.so" in g7
    assert not _workers_alive()


def test_a_file_cut_short_under_a_workers_mmap_is_read_by_the_audit(venv, kernels, tmp_path, monkeypatch):
    """Workers read GPU code through mmap; a file cut short while mapped kills the worker with a real
    SIGBUS. The audit then reads that object itself and says what an audit in one process says of the
    file as it is now. (The cut is made by the test inside the worker, right after the mapping: the
    moment a real truncation would have to hit.)"""
    victim = venv.site / "ext_cufft_layout" / "_C.abi3.so"
    mapped = fatbin._map

    def map_then_cut(fd: int):  # type: ignore[no-untyped-def]
        whole = mapped(fd)
        if os.readlink(f"/proc/self/fd/{fd}") == str(victim):
            os.truncate(victim, 4096)
        return whole

    monkeypatch.setattr(fatbin, "_map", map_then_cut)
    answered = _answers(monkeypatch)
    with_workers = _report(venv.prefix, "default", 2, tmp_path, monkeypatch)
    assert victim.stat().st_size == 4096  # the cut happened, under a worker's mapping
    assert not any(task == str(victim) for task in answered)  # that worker died: no answer
    assert any("\0" in task for task in answered)  # the other workers answered
    assert with_workers == _report(venv.prefix, "default", 0, tmp_path, monkeypatch)
    assert str(victim.relative_to(venv.site)) in " ".join(" ".join(map(str, f)) for f in with_workers[0])
    assert not _workers_alive()


def test_every_task_is_answered_or_left_to_the_caller():
    """More tasks than the pipe holds at once (the backlog), and a path too long for a task record."""
    workers = pool.Pool(lambda task: len(task), 2, 60.0)
    tasks = [f"/x/{i:06d}/lib.so" for i in range(6000)]
    long = "/" + "y" * 700
    try:
        for task in [*tasks, long]:
            workers.submit(task)
        workers.close_queue()
        assert workers.workers == 2
        assert [workers.answer(t) for t in tasks] == [len(t) for t in tasks]
        assert workers.answer(long) is None  # never queued: the caller reads it
        assert workers.answer("/never/submitted") is None
    finally:
        workers.close()
    assert not _workers_alive()


def test_no_workers_on_request_or_with_other_threads(monkeypatch):
    import threading

    assert pool.Pool(str, 0, 60.0).failed is False
    none = pool.Pool(str, 0, 60.0)
    none.submit("/a")
    assert none.failed and none.workers == 0 and none.answer("/a") is None
    stop = threading.Event()
    thread = threading.Thread(target=stop.wait)
    thread.start()
    try:
        beside = pool.Pool(str, 2, 60.0)
        beside.submit("/a")  # a fork beside another thread could copy a held lock: read in-process
        assert beside.failed and beside.workers == 0
    finally:
        stop.set()
        thread.join()
    monkeypatch.setenv("SPARKENV_AUDIT_WORKERS", "5")
    assert scan.default_workers() == 5


_SLOW_AUDIT = """
import sys, time
from sparkenv.audit import scan
read = scan.read_ahead
def slow(task, cap):
    if task.endswith(".so"):  # every worker, once at its first shared object, stays busy: none ends first
        time.sleep(600)
    return read(task, cap)
scan.read_ahead = slow
sys.argv = ["sparkenv", "audit", sys.argv[1]]
from sparkenv.cli.entry import main
main()
"""


@pytest.mark.parametrize("sig", [signal.SIGTERM, signal.SIGINT])
def test_a_signal_to_the_audit_kills_every_worker(venv, tmp_path, sig):
    env = {**os.environ, "SPARKENV_AUDIT_WORKERS": "3", "SPARKENV_CACHE_DIR": str(tmp_path / "c")}
    env["PYTHONPATH"] = os.pathsep.join([str(ROOT), env.get("PYTHONPATH", "")])
    proc = subprocess.Popen(
        [sys.executable, "-c", _SLOW_AUDIT, str(venv.prefix)],
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        # as from a terminal: a background CI job hands SIGINT down ignored, and an ignored SIGINT stays so
        preexec_fn=default_dispositions,
    )
    try:
        workers: list[int] = []
        deadline = time.monotonic() + 60
        while len(workers) < 3 and time.monotonic() < deadline and proc.poll() is None:
            time.sleep(0.05)
            workers = _children_of(proc.pid)
        assert len(workers) == 3, "the audit never started its workers"
        time.sleep(0.5)  # the workers sleep in their reads; the audit waits for their answers
        assert proc.poll() is None
        proc.send_signal(sig)
        _, err = proc.communicate(timeout=30)
    finally:
        proc.kill()
        proc.wait()
    assert proc.returncode == 128 + sig, err
    assert "Traceback" not in err
    assert [pid for pid in workers if Path(f"/proc/{pid}").exists()] == []


def _children_of(pid: int) -> list[int]:
    found = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            if int((entry / "stat").read_text().rsplit(")", 1)[1].split()[1]) == pid:
                found.append(int(entry.name))
        except (OSError, ValueError, IndexError):
            continue
    return found


def _workers_alive() -> list[int]:
    return _children_of(os.getpid())

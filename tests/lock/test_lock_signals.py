"""SIGTERM/SIGHUP during `sparkenv lock` while uv runs: uv's whole process group is gone, the
`sparkenv-lock-*` folder removed, exit 143/129 with one line saying so; and a failing --report replaces
no lock. Real processes, real signals, an index that accepts connections and never answers."""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest
from artifacts import Index, default_dispositions, serve


@pytest.fixture
def silent_index():
    """Accepts connections and never answers: uv waits on it (for its own 30 s timeout)."""
    sock = socket.socket()
    sock.bind(("127.0.0.1", 0))
    sock.listen(16)
    held: list[socket.socket] = []
    stop = threading.Event()

    def accept() -> None:
        sock.settimeout(0.2)
        while not stop.is_set():
            try:
                held.append(sock.accept()[0])
            except OSError:
                continue

    t = threading.Thread(target=accept, daemon=True)
    t.start()
    yield f"http://127.0.0.1:{sock.getsockname()[1]}/simple/"
    stop.set()
    t.join()
    for c in held:
        c.close()
    sock.close()


def _children(pid: int) -> list[int]:
    out = []
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                fields = (entry / "stat").read_text().rsplit(")", 1)[1].split()
            except OSError:
                continue
            if int(fields[1]) == pid:
                out.append(int(entry.name))
    return out


def _alive(pid: int) -> bool:
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except OSError:
        return False
    return state != "Z"


@pytest.mark.parametrize("sig, code", [(signal.SIGTERM, 143), (signal.SIGHUP, 129)])
def test_signal_while_uv_runs_kills_its_group_and_removes_the_work_folder(silent_index, tmp_path, sig, code):
    req = tmp_path / "requirements.txt"
    req.write_text("peft\n")
    tmp = tmp_path / "tmp"
    tmp.mkdir()
    env = {**os.environ, "TMPDIR": str(tmp), "UV_CACHE_DIR": str(tmp_path / "uv"), "UV_HTTP_TIMEOUT": "120"}
    cmd = [sys.executable, "-m", "sparkenv", "lock", str(req), "--index-url", silent_index,
           "--output-dir", str(tmp_path / "out")]  # fmt: skip
    proc = subprocess.Popen(
        cmd,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env=env,
        preexec_fn=default_dispositions,  # SIGHUP as from a terminal, also under nohup
    )
    try:
        deadline = time.monotonic() + 30
        uv: list[int] = []
        while time.monotonic() < deadline and not uv:
            uv = [p for p in _children(proc.pid) if "uv" in Path(f"/proc/{p}/comm").read_text()]
            time.sleep(0.05)
        assert uv, "uv never started"
        work = list(tmp.glob("sparkenv-lock-*"))
        assert len(work) == 1
        proc.send_signal(sig)
        _, err = proc.communicate(timeout=20)
    finally:
        if proc.poll() is None:
            proc.kill()
    assert proc.returncode == code, err
    lines = err.strip().splitlines()
    assert len(lines) == 1 and signal.Signals(sig).name in lines[0]
    assert f"process group {uv[0]}" in lines[0] and str(work[0]) in lines[0]
    assert not any(_alive(p) for p in uv) and not work[0].exists()
    assert not (tmp_path / "out").exists()


def test_a_report_that_cannot_be_written_replaces_no_lock(run, tmp_path):
    ix = Index(tmp_path / "ix")
    ix.wheel("solo", "1.0")
    ix.wheel("solo", "2.0")
    server = serve(ix)
    try:
        req = tmp_path / "requirements.txt"
        env = {"UV_CACHE_DIR": str(tmp_path / "uv"), "SPARKENV_CACHE_DIR": str(tmp_path / "sp")}
        args = ["--index-url", ix.url, "--output-dir", str(tmp_path / "out")]
        req.write_text("solo==1.0\n")
        assert run("lock", str(req), *args, env=env).code == 0
        before = {p.name: p.read_text() for p in (tmp_path / "out").iterdir()}
        req.write_text("solo==2.0\n")
        r = run("lock", str(req), *args, "--report", str(tmp_path / "no-such-dir" / "r.json"), env=env)
        assert r.code == 2 and "no-such-dir" in r.err and len(r.err.strip().splitlines()) == 1
        ro = tmp_path / "ro"
        ro.mkdir()
        (ro / "r.json").mkdir()  # a folder where the report should go: fails only at write time
        r = run("lock", str(req), *args, "--junit", str(ro / "r.json"), env=env)
        assert r.code == 2, r.out + r.err
        assert {p.name: p.read_text() for p in (tmp_path / "out").iterdir()} == before
        r = run("lock", str(req), *args, "--report", str(tmp_path / "r.json"), env=env)
        assert r.code == 0 and (tmp_path / "r.json").is_file()
        assert "solo==2.0" in (tmp_path / "out" / "requirements.ngc-25-11.txt").read_text()
    finally:
        server.shutdown()

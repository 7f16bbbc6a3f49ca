"""`gate --watch` in a real container under each kind of PID 1: docker's --init (tini), tini with -g
(signals to the child's process group), and the gate itself as PID 1. When a PID namespace's init exits,
the kernel SIGKILLs every other process in it, and each of these inits exits as soon as its child does:
the watcher must be done by then. The stand-in base (tests/build_helpers.py) runs this tree's sparkenv
from a read-only mount, with the host interpreter's site-packages (typer…) beside it."""

from __future__ import annotations

import os
import re
import subprocess
import sys
import time
from pathlib import Path

import build_helpers as bh
import pytest

from sparkenv.watch import record

pytestmark = pytest.mark.docker
ROOT = Path(__file__).parents[2]
TINI = Path("/usr/bin/tini-static")  # what docker's --init mounts as docker-init
PID1S = {
    "docker-init": (["--init"], []),
    "tini -g": (["-v", f"{TINI}:/tini:ro"], ["/tini", "-g", "--"]),
    "the gate": ([], []),
}


@pytest.fixture(scope="module")
def image() -> str:
    bh.ensure_standin(bh.engine_or_skip())
    found = subprocess.run(
        ["docker", "run", "--rm", "--entrypoint", "python3", bh.STANDIN_TAG, "-c",
         "import sys; print('%d.%d' % sys.version_info[:2])"],
        capture_output=True, text=True, timeout=120,
    )  # fmt: skip
    if found.stdout.strip() != "{}.{}".format(*sys.version_info[:2]):
        bh.skip_unless_required(
            "the stand-in's Python is not this interpreter's: its site-packages can't be lent"
        )
    return bh.STANDIN_TAG


def _site() -> str:
    import typer

    return str(Path(typer.__file__).parents[1])


def _start(pid1: str, folder: Path, code: str, name: str) -> subprocess.Popen[str]:
    if pid1 == "tini -g" and not TINI.exists():
        bh.skip_unless_required(f"{TINI} is not installed")
    folder.mkdir(parents=True, exist_ok=True)
    docker_opts, prefix = PID1S[pid1]
    argv = [
        "docker", "run", "--rm", "--name", name, *docker_opts,
        "-v", f"{ROOT}:/src:ro", "-v", f"{_site()}:/deps:ro", "-v", f"{folder}:/w",
        "-e", "PYTHONPATH=/src:/deps", "--entrypoint", prefix[0] if prefix else "python3",
        bh.STANDIN_TAG, *prefix[1:], *(["python3"] if prefix else []),
        "-m", "sparkenv", "gate", "-q", "--policy", "off", "--watch", "--watch-dir", "/w",
        "--watch-interval", "0.5", "--", "python3", "-c", code,
    ]  # fmt: skip
    return subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)


def _record(folder: Path) -> record.Record:
    (path,) = folder.glob("*.jsonl")
    return record.read(str(path))


@pytest.mark.parametrize("pid1", list(PID1S))
def test_the_record_ends_with_the_summary_under_any_pid1(tmp_path, image, pid1):
    """A normal short run: its exit status comes out of `docker run`, and the record ends cleanly."""
    proc = _start(
        pid1, tmp_path / "w", "import time; time.sleep(3); raise SystemExit(3)", f"watch-{os.getpid()}"
    )
    _out, err = proc.communicate(timeout=180)
    assert proc.returncode == 3, err
    rec = _record(tmp_path / "w")
    assert rec.summary is not None, f"no summary: the watcher was killed ({pid1} as PID 1)\n{err}"
    assert rec.summary["readings"] >= 2
    assert re.search(rf"sparkenv watch: pid {rec.header['pid']} ended after \+0:0\d", err), err
    assert Path(rec.path).with_suffix(".svg").is_file()


@pytest.mark.parametrize("pid1", list(PID1S))
def test_docker_stop_reaches_the_workload_once_and_the_record_ends_cleanly(tmp_path, image, pid1):
    """`docker stop` signals PID 1: the init passes SIGTERM to the gate, the gate to the workload, whose
    handler runs once and sets the status; a workload that does not handle it dies by it (exit 143)."""
    code = (
        "import signal, sys, time\n"
        "signal.signal(signal.SIGTERM, lambda *a: (print('got TERM', flush=True), sys.exit(42)))\n"
        "print('ready', flush=True)\n"
        "time.sleep(60)\n"
    )
    for n, (workload, status, said) in enumerate(
        [(code, 42, "got TERM"), ("print('ready', flush=True); import time; time.sleep(60)", 143, "")]
    ):
        name = f"watch-stop-{os.getpid()}-{n}"
        folder = tmp_path / f"w{n}"
        proc = _start(pid1, folder, workload, name)
        assert proc.stdout is not None
        assert proc.stdout.readline().strip() == "ready"
        deadline = time.monotonic() + 60
        while not list(folder.glob("*.jsonl")) and time.monotonic() < deadline:
            time.sleep(0.1)  # the watcher has started (it opened its record)
        subprocess.run(["docker", "kill", "--signal", "TERM", name], capture_output=True, timeout=60)
        out, err = proc.communicate(timeout=120)
        assert (proc.returncode, out.strip()) == (status, said), err
        rec = _record(folder)
        assert rec.summary is not None, f"no summary ({pid1} as PID 1)\n{err}"


@pytest.mark.parametrize("pid1", list(PID1S))
def test_an_orphan_of_the_workload_is_reaped(tmp_path, image, pid1):
    """A grandchild the workload leaves behind is handed to PID 1 (or to the gate, a subreaper while it
    has children): with the gate as PID 1 it must reap it, or it stays a zombie for the whole run."""
    code = (
        "import os, time\n"
        "if os.fork() == 0:\n"
        "    if os.fork() == 0:\n"
        "        os._exit(0)\n"
        "    os._exit(0)\n"
        "os.wait()\n"
        "time.sleep(1.5)\n"
        "z = [p for p in os.listdir('/proc') if p.isdigit()\n"
        "     and open(f'/proc/{p}/stat').read().rsplit(')', 1)[1].split()[0] == 'Z']\n"
        "print('zombies:', len(z), flush=True)\n"
    )
    proc = _start(pid1, tmp_path / "w", code, f"watch-orphan-{os.getpid()}")
    out, err = proc.communicate(timeout=180)
    assert (proc.returncode, out.strip()) == (0, "zombies: 0"), err

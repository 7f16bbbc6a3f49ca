"""A user without the `docker` group, for real: a second user is created (root only), runs
`python -m sparkenv host` from a copy of the code it can read, and is told it may not use the socket and
the command that fixes it; after that very command (`usermod -aG docker`) a new log-in passes, and a
session that predates it is told to log in again."""

from __future__ import annotations

import importlib.util
import json
import os
import shutil
import subprocess
import sys
import tempfile
import uuid
from pathlib import Path

import pytest
from host_helpers import ROOT, engine_or_skip, finding, skip_unless_required

pytestmark = [
    pytest.mark.docker,
    pytest.mark.skipif(
        os.geteuid() != 0, reason="creating a second user needs root (CI runs the tests as root)"
    ),
]

# What `python -m sparkenv host --json` imports, asked of a real run of it (printed at exit, on stderr)
RUN_AND_LIST = (
    "import atexit, json, runpy, sys; sys.argv = ['sparkenv', 'host', '--json']; "
    "atexit.register(lambda: sys.stderr.write('\\nMODULES ' + json.dumps(sorted("
    "{m.split('.')[0] for m in sys.modules} - set(sys.stdlib_module_names))) + '\\n')); "
    "runpy.run_module('sparkenv', run_name='__main__')"
)


def _dependencies() -> list[str]:
    out = subprocess.run([sys.executable, "-c", RUN_AND_LIST], capture_output=True, text=True, timeout=120)
    line = next(ln for ln in out.stderr.splitlines() if ln.startswith("MODULES "))
    return [m for m in json.loads(line[8:]) if m != "sparkenv"]


def _readable_copy(where: Path) -> Path:
    """sparkenv and its dependencies copied into `where`, readable by every user."""
    lib = where / "lib"
    shutil.copytree(ROOT / "sparkenv", lib / "sparkenv", ignore=shutil.ignore_patterns("__pycache__"))
    for name in _dependencies():
        spec = importlib.util.find_spec(name)
        if spec is None or spec.origin in (None, "built-in", "frozen"):
            continue
        if spec.submodule_search_locations:
            src = Path(next(iter(spec.submodule_search_locations)))
            if not (lib / src.name).exists():
                shutil.copytree(src, lib / src.name, ignore=shutil.ignore_patterns("__pycache__"))
        else:
            shutil.copy2(spec.origin, lib / Path(spec.origin).name)
    for path in [where, *where.rglob("*")]:
        path.chmod(0o755 if path.is_dir() else 0o644)
    return lib


def _python_for(user: str) -> str:
    """This interpreter where the user may run it; else the system's (same major.minor or newer)."""
    for python in (sys.executable, "/usr/bin/python3"):
        ok = subprocess.run(
            ["runuser", "-u", user, "--", python, "-c", "import sys; assert sys.version_info >= (3, 10)"],
            capture_output=True,
            timeout=60,
        )
        if ok.returncode == 0:
            return python
    skip_unless_required("no Python interpreter this second user may run")


@pytest.fixture
def readable():  # type: ignore[no-untyped-def]
    """A folder under /tmp every user can enter (pytest's own tmp folders are root's alone)."""
    where = Path(tempfile.mkdtemp(prefix="sparkenv-host-"))
    where.chmod(0o755)
    try:
        yield where
    finally:
        shutil.rmtree(where, ignore_errors=True)


@pytest.fixture
def stranger():  # type: ignore[no-untyped-def]
    if not shutil.which("useradd") or not shutil.which("runuser"):
        skip_unless_required("no useradd/runuser to make and act as a second user")
    name = f"spk{uuid.uuid4().hex[:8]}"
    subprocess.run(
        ["useradd", "--no-create-home", "--shell", "/usr/sbin/nologin", name], check=True, timeout=60
    )
    try:
        yield name
    finally:
        subprocess.run(["userdel", name], capture_output=True, timeout=60)


def _host_as(user: str, python: str, lib: Path, home: Path, how: list[str]) -> tuple[int, dict]:
    env = [
        "env",
        "-i",
        f"PATH={os.environ.get('PATH', '/usr/bin:/bin')}",
        f"PYTHONPATH={lib}",
        f"HOME={home}",
        f"SPARKENV_CACHE_DIR={home}/cache",
    ]
    proc = subprocess.run(
        [*how, *env, python, "-m", "sparkenv", "host", "--json"],
        capture_output=True,
        text=True,
        timeout=120,
        cwd=str(home),
    )
    assert proc.returncode in (0, 1) and proc.stdout.startswith("{"), (
        proc.stdout[-2000:] + proc.stderr[-2000:]
    )
    return proc.returncode, json.loads(proc.stdout)


def test_a_user_outside_the_docker_group_is_told_the_fix(stranger, readable):  # type: ignore[no-untyped-def]
    engine_or_skip()
    where = readable
    lib = _readable_copy(where)
    home = where / "home"
    home.mkdir()
    shutil.chown(home, stranger)
    python = _python_for(stranger)
    login = ["runuser", "-u", stranger, "--"]  # a fresh log-in: the groups /etc/group gives the user

    code, report = _host_as(stranger, python, lib, home, login)
    sock = finding(report, "docker:socket")
    assert code == 1 and sock["status"] == "FAIL", sock
    assert (
        "may not use the Docker socket" in sock["summary"] and "sudo usermod -aG docker $USER" in sock["fix"]
    )
    assert finding(report, "docker:engine")["status"] == "SKIP"  # one line for the one problem

    subprocess.run(["usermod", "-aG", "docker", stranger], check=True, timeout=60)  # the printed fix
    code, report = _host_as(stranger, python, lib, home, login)
    assert finding(report, "docker:socket")["status"] == "PASS"
    assert finding(report, "docker:engine")["status"] == "PASS"

    # a session that started before the fix keeps its old groups: told to log in again
    uid = subprocess.run(["id", "-u", stranger], capture_output=True, text=True, check=True).stdout.strip()
    gid = subprocess.run(["id", "-g", stranger], capture_output=True, text=True, check=True).stdout.strip()
    old_session = ["setpriv", f"--reuid={uid}", f"--regid={gid}", "--clear-groups", "--"]
    code, report = _host_as(stranger, python, lib, home, old_session)
    sock = finding(report, "docker:socket")
    assert sock["status"] == "FAIL" and "newgrp docker" in sock["fix"], sock

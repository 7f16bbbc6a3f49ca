"""Strict means strict for agreement, without network namespaces: one gate under `--policy strict` in
front of a real two-node torchrun (CPU torch, gloo) at this machine's own address, whose second node never
comes. Agreement not reached blocks the start (exit 1, "start blocked"), the G10 line says why, and the
workload never runs. G1 is left out (--ignore G1): CPU torch is a FAIL of its own, which would block the
start whatever G10 said. Before: the line was an ERROR and strict started torchrun, which then waited for
its missing peer (the test's timeout)."""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import sys
from pathlib import Path

import multinode_helpers as mh
import pytest

pytestmark = pytest.mark.torch


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def _own_address() -> str:
    """This machine's address on its default route (no packet is sent: a UDP socket's connect)."""
    with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as s:
        try:
            s.connect(("192.0.2.1", 9))  # TEST-NET-1: only the route is looked up
        except OSError:
            pytest.skip("no default route: no address but loopback")
        return str(s.getsockname()[0])


def test_a_peer_that_never_publishes_blocks_a_strict_start(tmp_path: Path) -> None:
    python = mh.torch_python()
    address = _own_address()
    script = tmp_path / "train.py"
    script.write_text(mh.TRAIN)
    argv = [sys.executable, "-m", "sparkenv", "gate", "--python", python, "--deadline", "6", "--ignore", "G1"]
    argv += ["--policy", "strict", "--", python, "-m", "torch.distributed.run", "--nnodes", "2"]
    argv += ["--nproc-per-node", "1", "--node-rank", "0", "--master-addr", address]
    argv += ["--master-port", str(_free_port()), str(script)]
    env = {**os.environ, "SPARKENV_CACHE_DIR": str(tmp_path / "cache")}
    proc = subprocess.Popen(
        argv,
        cwd=tmp_path,
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        start_new_session=True,
    )
    try:
        out, err = proc.communicate(timeout=60)
    except subprocess.TimeoutExpired:
        os.killpg(proc.pid, signal.SIGKILL)
        out, err = proc.communicate()
        pytest.fail(f"the workload started and waited for its missing peer:\n{err[-3000:]}")
    fails = [ln for ln in err.splitlines() if ln.startswith("G10 FAIL: agreement") or "did not publish" in ln]
    assert len(fails) == 1, err
    assert "--policy strict starts the workload only when every node agreed" in fails[0]
    assert [ln for ln in err.splitlines() if " FAIL: " in ln] == fails, err  # nothing else blocks it
    assert proc.returncode == 1 and "start blocked" in err, err
    assert "workload rank" not in out  # torchrun never started

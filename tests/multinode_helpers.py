"""Two "nodes" on one machine: two network namespaces joined by a veth pair (real addresses, real
sockets, their own /sys/class/net), each running a real process. Needs root (CI runs as root)."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path
from typing import NoReturn

import pytest

TRAIN = """
import os, torch, torch.distributed as dist
dist.init_process_group("gloo")
t = torch.tensor([float(dist.get_rank() + 1)])
dist.all_reduce(t)
print(f"workload rank {dist.get_rank()} of {dist.get_world_size()} sum {t.item():g}", flush=True)
dist.destroy_process_group()
"""


def torch_python() -> str:
    """An interpreter with torch (CPU is enough): $SPARKENV_TEST_TORCH_PYTHON (.ci/run makes a venv for
    it, so torch never enters the interpreter the other tests run in), else this one if it has torch."""
    python = os.environ.get("SPARKENV_TEST_TORCH_PYTHON") or sys.executable
    ok = subprocess.run([python, "-c", "import torch.distributed"], capture_output=True, timeout=120)
    if ok.returncode == 0:
        return python
    _lacking(f"{python} cannot import torch.distributed (set SPARKENV_TEST_TORCH_PYTHON to one that can)")


def _lacking(reason: str) -> NoReturn:
    """Skip on a developer's machine; under SPARKENV_REQUIRE_TORCH=1 (.ci/run, which provisions root,
    iproute2 and the torch venv) a missing part is a failure, so CI never skips what it claims to test."""
    if os.environ.get("SPARKENV_REQUIRE_TORCH") == "1":
        pytest.fail(f"{reason}; SPARKENV_REQUIRE_TORCH=1 makes this a failure (.ci/run provisions it)")
    pytest.skip(reason)


def require_netns() -> None:
    if os.geteuid() != 0 or shutil.which("ip") is None:
        _lacking("network namespaces need root and iproute2")


def require_iproute2() -> None:
    if shutil.which("ip") is None:
        _lacking("iproute2 is not installed")


def _ip(*args: str) -> None:
    subprocess.run(["ip", *args], check=True, capture_output=True, timeout=20)


@dataclass
class Node:
    ns: str
    address: str
    dev: str


@dataclass
class Ran:
    code: int
    out: str
    err: str
    seconds: float

    def g10(self, word: str) -> list[str]:
        return [ln for ln in self.err.splitlines() if ln.startswith("G10 ") and word in ln]


class TwoNodes:
    def __init__(self, tag: str, python: str = sys.executable) -> None:
        self.python = python  # the workload's interpreter (has torch), also the gate's --python
        self.nodes = [Node(f"spk{tag}{x}", f"10.77.0.{i + 1}", f"v{tag}{x}") for i, x in enumerate("ab")]
        a, b = self.nodes
        self.close()  # what a killed run of the same name left behind
        for n in self.nodes:
            _ip("netns", "add", n.ns)
            _ip("-n", n.ns, "link", "set", "lo", "up")
        _ip(
            "link",
            "add",
            f"v{tag}a",
            "netns",
            a.ns,
            "type",
            "veth",
            "peer",
            "name",
            f"v{tag}b",
            "netns",
            b.ns,
        )
        for n, dev in ((a, f"v{tag}a"), (b, f"v{tag}b")):
            _ip("-n", n.ns, "addr", "add", f"{n.address}/24", "dev", dev)
            _ip("-n", n.ns, "link", "set", dev, "up")

    def close(self) -> None:
        for n in self.nodes:
            subprocess.run(["ip", "netns", "del", n.ns], capture_output=True, timeout=20)

    def start(self, i: int, argv: list[str], env: dict[str, str], cwd: Path) -> subprocess.Popen[str]:
        full = {
            k: v for k, v in os.environ.items() if k not in ("VIRTUAL_ENV",) and not k.startswith("NCCL_")
        }
        # gloo binds to what the hostname resolves to unless told: name the node's link, as on real nodes
        full["GLOO_SOCKET_IFNAME"] = self.nodes[i].dev
        full.update(env)
        return subprocess.Popen(
            ["ip", "netns", "exec", self.nodes[i].ns, *argv],
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
            env=full,
            cwd=cwd,
            start_new_session=True,
        )

    def gate_torchrun(
        self,
        which: list[int],
        cwd: Path,
        envs: dict[int, dict[str, str]] | None = None,
        gate_args: tuple[str, ...] = (),
        timeout: float = 120,
    ) -> dict[int, Ran]:
        """`sparkenv gate … -- python -m torch.distributed.run --nnodes 2 …` on the chosen nodes at once."""
        script = cwd / "train.py"
        script.write_text(TRAIN)
        procs = {}
        started = time.monotonic()
        for i in which:
            argv = [sys.executable, "-m", "sparkenv", "gate", "--python", self.python, *gate_args, "--"]
            argv += [self.python, "-m", "torch.distributed.run", "--nnodes", "2", "--nproc-per-node", "1"]
            argv += ["--node-rank", str(i), "--master-addr", self.nodes[0].address, "--master-port", "29500"]
            argv += [str(script)]
            procs[i] = (self.start(i, argv, (envs or {}).get(i, {}), cwd), time.monotonic())
        out = {}
        for i, (proc, t0) in procs.items():
            try:
                o, e = proc.communicate(timeout=max(1.0, timeout - (time.monotonic() - started)))
            except subprocess.TimeoutExpired:
                os.killpg(proc.pid, 9)
                o, e = proc.communicate()
            out[i] = Ran(proc.returncode, o, e, time.monotonic() - t0)
        return out

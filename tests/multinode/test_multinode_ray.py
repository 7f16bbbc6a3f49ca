"""Two gates in front of a real two-node Ray cluster (CPU Ray from the public index, installed by .ci/run
into the torch venv), one node per network namespace, as NVIDIA's two-Spark recipe runs it: `ray start
--head` on node A; on node B the gate in front of `ray start --address A:6379`; on node A the gate in
front of a Ray job that needs both nodes (one CPU bundle per node, STRICT_SPREAD). The gates agree through
the cluster's internal key-value store, or block with the difference named on both nodes.

The cluster's head starts once for the module (Ray starts slowly on 2 cores); the tests run in order:
the blocked ones first (node B never joins), then the one that agrees and lets B join and the job run."""

from __future__ import annotations

import os
import re
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

import multinode_helpers as mh
import pytest

pytestmark = [pytest.mark.torch, pytest.mark.netns, pytest.mark.network]

JOB = """
import os, ray
from ray.util.placement_group import placement_group
from ray.util.scheduling_strategies import PlacementGroupSchedulingStrategy
ray.init(address=os.environ["RAY_ADDRESS"], log_to_driver=False, logging_level="ERROR")
pg = placement_group([{"CPU": 1}] * 2, strategy="STRICT_SPREAD")  # one bundle on each node: needs both
ray.get(pg.ready(), timeout=90)

@ray.remote(num_cpus=1)
def where():
    return ray.util.get_node_ip_address()

refs = [where.options(scheduling_strategy=PlacementGroupSchedulingStrategy(pg, i)).remote() for i in (0, 1)]
print("ray job ran on " + " ".join(sorted(ray.get(refs))), flush=True)
"""
OBJECT_STORE = str(100 << 20)  # Ray's default is 30% of memory per node; two nodes share this machine


class Cluster:
    def __init__(self, pair: mh.TwoNodes, tmp: Path) -> None:
        self.pair = pair
        self.ray = str(Path(pair.python).parent / "ray")
        self.head = f"{pair.nodes[0].address}:6379"
        self.groups: list[int] = []  # process groups of `ray start` (its daemons stay in them)
        self.tmp = tmp
        # Each node its own Ray temp dir (sockets, session files), as on two machines; short: socket paths
        self.env = {i: {"RAY_TMPDIR": f"/tmp/sr{os.getpid() % 10000}{x}"} for i, x in enumerate("ab")}
        for env in self.env.values():
            env["RAY_USAGE_STATS_ENABLED"] = "0"
            os.makedirs(env["RAY_TMPDIR"], exist_ok=True)

    def start_head(self) -> float:
        argv = [
            self.ray,
            "start",
            "--head",
            "--port",
            "6379",
            "--node-ip-address",
            self.pair.nodes[0].address,
        ]
        argv += ["--num-cpus", "1", "--include-dashboard=false", "--disable-usage-stats"]
        argv += ["--object-store-memory", OBJECT_STORE]
        t = time.monotonic()
        proc = self.pair.start(0, argv, self.env[0], self.tmp)
        self.groups.append(proc.pid)
        out, err = proc.communicate(timeout=120)
        assert proc.returncode == 0, out + err
        return time.monotonic() - t

    def join_argv(self) -> list[str]:
        argv = [self.ray, "start", "--address", self.head, "--node-ip-address", self.pair.nodes[1].address]
        return [*argv, "--num-cpus", "1", "--disable-usage-stats", "--object-store-memory", OBJECT_STORE]

    def gates(
        self, envs: dict[int, dict[str, str]], gate_args: tuple[str, ...], which: tuple[int, ...] = (0, 1)
    ) -> dict[int, mh.Ran]:
        """Node A: the gate in front of the job; node B: the gate in front of `ray start --address`."""
        script = self.tmp / "job.py"
        script.write_text(JOB)
        gate = [sys.executable, "-m", "sparkenv", "gate", "--python", self.pair.python, *gate_args, "--"]
        workloads = {0: [self.pair.python, str(script), "--nnodes", "2"], 1: self.join_argv()}
        procs = {}
        for i in which:
            env = {**self.env[i], "RAY_ADDRESS": self.head, **envs.get(i, {})}
            procs[i] = (self.pair.start(i, gate + workloads[i], env, self.tmp), time.monotonic())
            self.groups.append(procs[i][0].pid)
        out = {}
        for i, (proc, t0) in procs.items():
            try:
                o, e = proc.communicate(timeout=180)
            except subprocess.TimeoutExpired:
                os.killpg(proc.pid, signal.SIGKILL)
                o, e = proc.communicate()
            out[i] = mh.Ran(proc.returncode, o, e, time.monotonic() - t0)
        return out

    def close(self) -> None:
        for sig in (signal.SIGTERM, signal.SIGKILL):
            for pgid in self.groups:
                try:
                    os.killpg(pgid, sig)
                except ProcessLookupError:
                    continue
            time.sleep(2.0 if sig == signal.SIGTERM else 0.2)
        self.pair.close()
        for env in self.env.values():
            shutil.rmtree(env["RAY_TMPDIR"], ignore_errors=True)


def ray_python() -> str:
    python = mh.torch_python()
    ok = subprocess.run([python, "-c", "import ray"], capture_output=True, timeout=120)
    if ok.returncode != 0:
        mh._lacking(f"{python} cannot import ray (.ci/run installs it into the torch venv)")
    return python


@pytest.fixture(scope="module")
def cluster(tmp_path_factory):
    python = ray_python()
    mh.require_netns()
    pair = mh.TwoNodes(f"r{os.getpid() % 1000}", python)
    c = Cluster(pair, tmp_path_factory.mktemp("ray"))
    try:
        seconds = c.start_head()
        print(f"\n`ray start --head` took {seconds:.1f} s")
        yield c
    finally:
        c.close()


@pytest.fixture
def locks(tmp_path):
    a, b = tmp_path / "pylock.a.toml", tmp_path / "pylock.b.toml"
    a.write_text(
        'lock-version = "1.0"\ncreated-by = "test"\n[[packages]]\nname = "ray"\nversion = "2.60.0"\n'
    )
    b.write_text(
        'lock-version = "1.0"\ncreated-by = "test"\n[[packages]]\nname = "ray"\nversion = "2.59.0"\n'
    )
    return a, b


def _blocked_both(ran: dict[int, mh.Ran], field: str) -> list[str]:
    lines = []
    for r in ran.values():
        fail = r.g10(f"disagree on {field}")
        assert len(fail) == 1, r.err
        assert r.code == 1 and "start blocked" in r.err, r.err
        assert "ray job ran" not in r.out and "Ray runtime started" not in r.out + r.err  # neither started
        lines.append(fail[0])
    return lines


def test_a_lone_gate_reports_the_missing_node_within_the_deadline(cluster, tmp_path):
    report = tmp_path / "report.json"
    ran = cluster.gates({}, ("--deadline", "10", "--policy", "strict", "--report", str(report)), which=(0,))[
        0
    ]
    line = ran.g10("did not publish")
    assert len(line) == 1 and line[0].startswith("G10 FAIL: node(s) 1 more"), ran.err  # strict: blocks
    assert "--policy strict starts the workload only when every node agreed" in line[0], line[0]
    assert ran.code == 1 and "ray job ran" not in ran.out
    import json

    assert json.loads(report.read_text())["context"]["gather_s"] <= 11.0  # within the deadline


def test_different_lock_blocks_both_nodes_naming_it(cluster, locks):
    envs = {0: {"SPARKENV_LOCK": str(locks[0])}, 1: {"SPARKENV_LOCK": str(locks[1])}}
    lines = _blocked_both(cluster.gates(envs, ("--deadline", "20", "--policy", "strict")), "lock")
    for line in lines:  # the head is node 0 on both nodes, whichever gate speaks
        assert re.match(r"G10 FAIL: nodes disagree on lock: node 0 \(\S+\) has sha256:\S+, node 1 \(", line)
    assert lines[0] == lines[1]


def test_different_nccl_setting_blocks_both_nodes_naming_it(cluster):
    envs = {1: {"NCCL_SOCKET_IFNAME": "=enp1s0f1np1"}}
    lines = _blocked_both(
        cluster.gates(envs, ("--deadline", "20", "--policy", "strict")), "NCCL_SOCKET_IFNAME"
    )
    for line in lines:
        assert (
            "node 0 (" in line and "has unset" in line and "node 1 (" in line and "has =enp1s0f1np1" in line
        )


def test_two_gates_agree_node_b_joins_and_the_job_runs_on_both(cluster, locks):
    """Agreement (the records the blocked runs left in the store do not count), then --link-test through
    Ray on node A's gate once B has joined, then the job on both nodes."""
    env = {"SPARKENV_LOCK": str(locks[0]), "SPARKENV_IMAGE": "127.0.0.1:5000/serve@sha256:" + "b" * 64}
    ran = cluster.gates({0: env, 1: env}, ("--deadline", "60", "--link-test"))
    for i, r in ran.items():
        agree = r.g10("agree")
        assert len(agree) == 1 and agree[0].startswith("G10 PASS: 2 nodes agree on "), r.err
        assert "lock" in agree[0] and "image" in agree[0] and "torch" in agree[0]
        assert not r.g10("FAIL") and not r.g10("ERROR"), r.err
        assert r.code == 0, r.err
        print(f"\nnode {i}: gate + workload {r.seconds:.1f} s")
    head = ran[0]
    transfer = head.g10("Ray object transfer")
    to = cluster.pair.nodes[1].address
    assert len(transfer) == 1 and re.match(
        rf"G10 INFO: Ray object transfer of 64 MiB to {to}: [\d.]+ GB/s \(median of", transfer[0]
    ), head.err
    allreduce = head.g10("all-reduce")
    assert len(allreduce) == 1 and allreduce[0].startswith(
        "G10 INFO: gloo all-reduce of 64 MiB across 2 nodes"
    )
    a, b = cluster.pair.nodes
    assert f"ray job ran on {a.address} {b.address}" in head.out, head.out + head.err
    assert "Ray runtime started" in ran[1].out + ran[1].err  # the gate exec'd `ray start --address`

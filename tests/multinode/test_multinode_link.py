"""G10 per-node link checks on /sys trees (tests/fixtures/sys): the real reader on real files, the real
judgement, and the gate's CLI replaying what it recorded."""

from __future__ import annotations

import json
import shutil
import subprocess
from pathlib import Path

import multinode_helpers
import pytest

from sparkenv.core.report import Status
from sparkenv.environment import launch, nccl, sysfs
from sparkenv.rules import g10_link as judge_link

SYS = Path(__file__).parents[1] / "fixtures" / "sys"
GOOD_ENV = {
    "NCCL_IB_HCA": "=rocep1s0f1,roceP2p1s0f1",
    "NCCL_IB_GID_INDEX": "3",
    "NCCL_SOCKET_IFNAME": "enp1s0f1np1",
}
TORCHRUN = ["torchrun", "--nnodes", "2", "--node-rank", "0", "--master-addr", "192.168.177.11", "train.py"]


def judge(tree: str, env: dict[str, str], workload: list[str] = TORCHRUN, spark: bool = True, confs=()):
    link = sysfs.read_link(str(SYS / tree))
    settings = nccl.effective(env, list(confs))
    plan = launch.read(workload, env, {})
    return {f.subject: f for f in judge_link.check(link, settings, plan, spark)}


def test_reader_sees_the_spark_as_ibstat_and_ibdev2netdev_show_it():
    link = sysfs.read_link(str(SYS / "spark-healthy"))
    assert sorted(link["rdma"]) == ["roceP2p1s0f0", "roceP2p1s0f1", "rocep1s0f0", "rocep1s0f1"]
    port = link["rdma"]["rocep1s0f1"]["ports"]["1"]
    assert (port["state"], port["phys_state"], port["rate_gbps"], port["link_layer"]) == (
        "ACTIVE",
        "LinkUp",
        200.0,
        "Ethernet",
    )
    assert port["gids"]["3"] == {
        "gid": "0000:0000:0000:0000:0000:ffff:c0a8:b10b",
        "type": "RoCE v2",
        "ndev": "enp1s0f1np1",
        "ipv4": "192.168.177.11",
    }
    assert "15" not in port["gids"]  # all-zero slots are unused, not GIDs
    assert link["rdma"]["rocep1s0f1"]["netdevs"] == ["enp1s0f1np1"]
    assert link["net"]["wlP9s9"]["wireless"] and link["net"]["enp1s0f1np1"]["mtu"] == 9000
    assert link["net"]["enp1s0f0np0"]["speed_mbps"] is None  # a down port has no speed
    assert link["net"]["enP7s7"]["addresses"] == ["10.0.0.21/24"]


def test_live_addresses_agree_with_ip_json(tmp_path):
    """The live reader (ioctls, no `ip` needed) and a recording by record.sh (`ip -j addr`) agree here."""
    multinode_helpers.require_iproute2()
    subprocess.run(["bash", str(SYS / "record.sh"), str(tmp_path / "rec")], check=True, capture_output=True)
    live = sysfs.read_link("/")
    recorded = sysfs.read_link(str(tmp_path / "rec"))
    assert {k: v["addresses"] for k, v in live["net"].items()} == {
        k: v["addresses"] for k, v in recorded["net"].items()
    }
    assert {k: v["operstate"] for k, v in live["net"].items()} == {
        k: v["operstate"] for k, v in recorded["net"].items()
    }


def test_healthy_spark_with_the_playbook_settings_passes():
    found = judge("spark-healthy", GOOD_ENV)
    assert found["rdma:rocep1s0f1"].status is Status.PASS
    assert found["rdma:roceP2p1s0f1"].status is Status.PASS
    assert found["rdma:rocep1s0f0"].status is Status.INFO  # no cable in the inner port: not a problem
    assert found["NCCL_IB_HCA"].status is Status.PASS
    assert (
        found["NCCL_IB_GID_INDEX"].status is Status.PASS
        and "192.168.177.11" in found["NCCL_IB_GID_INDEX"].summary
    )
    assert found["NCCL_SOCKET_IFNAME"].status is Status.PASS
    assert found["master-addr"].status is Status.PASS and "enp1s0f1np1" in found["master-addr"].summary
    assert not [f for f in found.values() if f.status in (Status.FAIL, Status.WARN, Status.ERROR)]


def test_degraded_spark_warns_on_rate_and_mtu():
    found = judge("spark-degraded", GOOD_ENV)
    rate = found["rdma:rocep1s0f1"]
    assert rate.status is Status.WARN and "25 Gb/s, expected 200" in rate.summary
    mtu = found["rdma:roceP2p1s0f1"]
    assert mtu.status is Status.WARN and "MTU 1500" in mtu.summary and "mtu 9000" in (mtu.fix or "")


@pytest.mark.parametrize(
    ("change", "subject", "status", "words", "fix"),
    [
        (
            {"NCCL_IB_HCA": None},
            "NCCL_IB_HCA",
            Status.WARN,
            "both halves of a ConnectX-7 port are Active (rocep1s0f1,roceP2p1s0f1)",
            "export NCCL_IB_HCA=rocep1s0f1,roceP2p1s0f1 on every node",
        ),
        (
            {"NCCL_IB_HCA": "rocep1s0f1"},
            "NCCL_IB_HCA",
            Status.WARN,
            "leaves out roceP2p1s0f1",
            "export NCCL_IB_HCA=rocep1s0f1,roceP2p1s0f1",
        ),
        (
            {"NCCL_IB_HCA": "roceP2p1s0f1"},
            "NCCL_IB_HCA",
            Status.WARN,
            "leaves out rocep1s0f1",
            "export NCCL_IB_HCA=rocep1s0f1,roceP2p1s0f1",
        ),
        (
            {"NCCL_IB_HCA": "mlx5_0,mlx5_1"},
            "NCCL_IB_HCA",
            Status.FAIL,
            "names mlx5_0, mlx5_1: no such RDMA device",
            "set NCCL_IB_HCA to this node's devices (roceP2p1s0f1, rocep1s0f1)",
        ),
        (
            {"NCCL_IB_HCA": "=rocep1s0f0"},
            "NCCL_IB_HCA",
            Status.FAIL,
            "selects only devices that are not Active (rocep1s0f0)",
            "name the Active devices: roceP2p1s0f1, rocep1s0f1",
        ),
        (
            {"NCCL_IB_HCA": "roce"},
            "NCCL_IB_HCA",
            Status.PASS,
            "selects Active roceP2p1s0f1, rocep1s0f1",
            None,
        ),
        ({"NCCL_IB_HCA": "^=rocep1s0f0,roceP2p1s0f0"}, "NCCL_IB_HCA", Status.PASS, "roceP2p1s0f1", None),
        (
            {"NCCL_IB_GID_INDEX": "5"},
            "NCCL_IB_GID_INDEX",
            Status.FAIL,
            "no GID at that index on roceP2p1s0f1, rocep1s0f1",
            "pick the index of a RoCE v2 GID: grep . /sys/class/infiniband/*/ports/1/gid_attrs/types/*",
        ),
        (
            {"NCCL_IB_GID_INDEX": "2"},
            "NCCL_IB_GID_INDEX",
            Status.WARN,
            "not a RoCE v2 GID on roceP2p1s0f1 (IB/RoCE v1), rocep1s0f1 (IB/RoCE v1)",
            "pick the index of a RoCE v2 GID (public Spark setups use 3)",
        ),
        (
            {"NCCL_IB_GID_INDEX": " 3 "},
            "NCCL_IB_GID_INDEX",
            Status.PASS,
            "is RoCE v2 on roceP2p1s0f1 192.168.178.11, rocep1s0f1 192.168.177.11",
            None,
        ),
        ({"NCCL_IB_GID_INDEX": None}, "NCCL_IB_GID_INDEX", Status.INFO, "RoCE v2 IPv4 GIDs here: 3", None),
        (
            {"NCCL_SOCKET_IFNAME": "eth0"},
            "NCCL_SOCKET_IFNAME",
            Status.FAIL,
            "matches no interface that is up",
            "name this node's link interface (enP2p1s0f1np1, enp1s0f1np1)",
        ),
        (
            {"NCCL_SOCKET_IFNAME": "=enp1s0f0np0"},  # the inner port's netdev: down
            "NCCL_SOCKET_IFNAME",
            Status.FAIL,
            "matches no interface that is up",
            "name this node's link interface",
        ),
        (
            {"NCCL_SOCKET_IFNAME": "wlP9s9"},
            "NCCL_SOCKET_IFNAME",
            Status.WARN,
            "selects wlP9s9: not the fast link",
            "name the link: enP2p1s0f1np1, enp1s0f1np1",
        ),
        (
            {"NCCL_SOCKET_IFNAME": None},
            "NCCL_SOCKET_IFNAME",
            Status.WARN,
            "enP7s7, wlP9s9 are up beside the link (enP2p1s0f1np1, enp1s0f1np1)",
            "export NCCL_SOCKET_IFNAME=enp1s0f1np1 (the same name on every node)",
        ),
        (
            {"NCCL_IB_DISABLE": "1"},
            "NCCL_IB_DISABLE",
            Status.WARN,
            "NCCL_IB_DISABLE=1 (environment) with Active RDMA devices: NCCL uses TCP sockets",
            "unset NCCL_IB_DISABLE (set in environment)",
        ),
        (
            {"NCCL_NET": "Socket"},
            "NCCL_NET",
            Status.WARN,
            "NCCL_NET=Socket (environment) with Active RDMA devices: NCCL uses TCP sockets",
            "unset NCCL_NET or set it to IB (set in environment)",
        ),
    ],
)
def test_nccl_settings_against_the_healthy_spark(change, subject, status, words, fix):
    env = {k: v for k, v in {**GOOD_ENV, **change}.items() if v is not None}
    found = judge("spark-healthy", env)[subject]
    assert found.status is status, found
    assert words in found.summary, found
    if fix is None:
        assert found.fix is None, found
    else:
        assert found.fix and fix in found.fix, found


@pytest.mark.parametrize("value", ["0", "", " "])
def test_nccl_ib_disable_off_says_nothing(value):
    assert "NCCL_IB_DISABLE" not in judge("spark-healthy", {**GOOD_ENV, "NCCL_IB_DISABLE": value})


HINT = "192.168.177.11 on enp1s0f1np1"  # the first Active twin's netdev, its address


@pytest.mark.parametrize(
    ("addr", "status", "words", "fix"),
    [
        # the launcher advertising Wi-Fi
        ("192.168.1.50", Status.WARN, "192.168.1.50 is on wlP9s9 (Wi-Fi), not the link", f"address ({HINT})"),
        # the peer's management address
        ("10.0.0.7", Status.WARN, "10.0.0.7 is on enP7s7, not on the link", f"address ({HINT})"),
        ("127.0.0.1", Status.FAIL, "127.0.0.1 cannot be reached from another node", f"address ({HINT})"),
        ("0.0.0.0", Status.FAIL, "0.0.0.0 cannot be reached from another node", f"address ({HINT})"),
        ("192.168.177.12", Status.PASS, "192.168.177.12 is on enp1s0f1np1", None),  # the peer across the link
        ("192.168.178.11", Status.PASS, "192.168.178.11 is on enP2p1s0f1np1", None),  # this node, other half
        ("8.8.8.8", Status.INFO, "8.8.8.8 is not on a directly attached subnet (routed)", None),
        (
            "spark-b.invalid",
            Status.WARN,
            "spark-b.invalid does not resolve",
            "use the link interface's address",
        ),
    ],
)
def test_advertised_master_address(addr, status, words, fix):
    workload = [*TORCHRUN[:6], addr, *TORCHRUN[7:]]
    found = judge("spark-healthy", GOOD_ENV, workload)["master-addr"]
    assert found.status is status and words in found.summary, found
    assert found.evidence == (f"workload --master-addr {addr}",), found
    assert (found.fix is None) if fix is None else (found.fix and fix in found.fix), found


def test_vllm_host_ip_on_wifi_warns():
    env = {**GOOD_ENV, "VLLM_HOST_IP": "192.168.1.50", "NNODES": "2"}
    found = judge("spark-healthy", env, ["vllm", "serve", "m", "--tensor-parallel-size", "2"])
    assert found["VLLM_HOST_IP"].status is Status.WARN and "Wi-Fi" in found["VLLM_HOST_IP"].summary


def test_leftover_nccl_conf_is_named_and_judged(tmp_path):
    conf = tmp_path / "nccl.conf"
    conf.write_text("# from the last cluster\nNCCL_IB_HCA=mlx5_0\nNCCL_DEBUG=INFO\n")
    env = {k: v for k, v in GOOD_ENV.items() if k != "NCCL_IB_HCA"} | {"NCCL_CONF_FILE": str(conf)}
    confs = nccl.read_confs(env)
    assert confs[0] == {"path": str(conf), "settings": {"NCCL_IB_HCA": "mlx5_0", "NCCL_DEBUG": "INFO"}}
    found = judge("spark-healthy", env, confs=confs)["NCCL_IB_HCA"]
    assert found.status is Status.FAIL and f"mlx5_0 from {conf}" in found.evidence
    # the environment wins over the file, as in NCCL
    found = judge("spark-healthy", {**env, "NCCL_IB_HCA": "roce"}, confs=confs)["NCCL_IB_HCA"]
    assert found.status is Status.PASS


def test_no_rdma_on_a_spark_warns_elsewhere_informs():
    assert judge("no-rdma", {}, spark=True)["link"].status is Status.WARN
    assert judge("no-rdma", {}, spark=False)["link"].status is Status.INFO


def _lines(text: str, word: str) -> list[str]:
    return [ln for ln in text.splitlines() if ln.startswith("G10 ") and word in ln]


def test_gate_reads_a_recorded_tree_and_replays_it(run, tmp_path):
    """The live gate on a recorded tree (SPARKENV_SYSFS_ROOT), its snapshot replayed with --facts. The
    workload is `true` with torchrun's arguments: read as a two-node launch, harmless when exec'd."""
    facts = tmp_path / "facts.json"
    env = {**GOOD_ENV, "SPARKENV_SYSFS_ROOT": str(SYS / "spark-degraded"), "SPARKENV_AGREE_PORT": "0"}
    workload = ["true", *TORCHRUN[1:]]
    r = run("gate", "--deadline", "3", "--dump-facts", str(facts), "--", *workload, env=env)
    assert r.code == 0, r.err
    rate = _lines(r.err, "rocep1s0f1 port")
    assert len(rate) == 1 and rate[0].startswith("G10 WARN: rocep1s0f1 port 1 is Active at 25 Gb/s"), r.err
    raw = json.loads(facts.read_text())
    assert raw["multinode"]["nccl_env"]["NCCL_IB_HCA"] == GOOD_ENV["NCCL_IB_HCA"]
    replay = run("gate", "--facts", str(facts))
    assert _lines(replay.out, "rocep1s0f1 port") == rate


def _unplugged(tmp_path: Path) -> str:
    """spark-healthy with its QSFP cable pulled: every port DOWN, as the kernel writes it."""
    tree = tmp_path / "unplugged"
    shutil.copytree(SYS / "spark-healthy", tree)
    for state in tree.glob("sys/class/infiniband/*/ports/*/state"):
        state.write_text("1: DOWN\n")
    return str(tree)


def test_no_active_port_warns_on_a_spark_with_the_cable_fix(tmp_path):
    link = sysfs.read_link(_unplugged(tmp_path))
    plan = launch.read(TORCHRUN, GOOD_ENV, {})
    found = {f.subject: f for f in judge_link.check(link, nccl.effective(GOOD_ENV, []), plan, True)}
    none = found["link"]
    assert none.status is Status.WARN and "4 RDMA device(s), none Active" in none.summary, none
    assert none.fix == "connect the QSFP cable and bring the link up (ibstat shows State: Active)"
    assert none.evidence == ("roceP2p1s0f0", "roceP2p1s0f1", "rocep1s0f0", "rocep1s0f1")
    port = found["rdma:rocep1s0f1"]
    assert port.status is Status.INFO and port.summary.startswith("rocep1s0f1 port 1 is DOWN"), port
    assert port.evidence[0] == "state DOWN, LinkUp" and "netdev enp1s0f1np1" in port.evidence
    # nothing Active: no transport, GID or HCA-halves judgement to make
    assert "NCCL_IB_GID_INDEX" not in found and "NCCL_IB_DISABLE" not in found
    other = {f.subject: f for f in judge_link.check(link, nccl.effective(GOOD_ENV, []), plan, False)}
    assert other["link"].status is Status.INFO


def test_no_rdma_tells_how_to_expose_the_devices():
    found = judge("no-rdma", {})["link"]
    assert "/sys/class/infiniband is empty" in found.summary
    assert found.fix and "--device /dev/infiniband" in found.fix and "rdma-core" in found.fix
    assert "NCCL_IB_HCA" not in judge("no-rdma", {"NCCL_IB_HCA": "mlx5_0"})


def test_degraded_port_names_the_cable_and_the_mtu_command():
    found = judge("spark-degraded", GOOD_ENV)
    assert found["rdma:rocep1s0f1"].fix == (
        "reseat or replace the QSFP cable, check both ends with ibstat; NVIDIA's check-connectx-bandwidth "
        "(dgx-spark-playbooks#108) measures the rail"
    )
    mtu = found["rdma:roceP2p1s0f1"]
    assert "enP2p1s0f1np1 MTU 1500: below the 9000 the Spark playbooks use" in mtu.summary
    assert mtu.fix == "ip link set enP2p1s0f1np1 mtu 9000 on both nodes (and on the switch)"
    # off a Spark, the Spark's MTU is not asked for
    assert judge("spark-degraded", GOOD_ENV, spark=False)["rdma:roceP2p1s0f1"].status is Status.PASS


def test_healthy_port_says_its_rate_and_evidence():
    port = judge("spark-healthy", GOOD_ENV)["rdma:rocep1s0f1"]
    assert port.summary == "rocep1s0f1 port 1 is Active at 200 Gb/s"
    assert port.evidence == (
        "state ACTIVE, LinkUp",
        "rate 200 Gb/sec (4X HDR)",
        "link layer Ethernet",
        "netdev enp1s0f1np1",
    )


def test_a_resolved_host_name_is_judged_by_its_address():
    link = sysfs.read_link(str(SYS / "spark-healthy"))
    workload = [*TORCHRUN[:6], "spark-b", *TORCHRUN[7:]]
    plan = launch.read(workload, GOOD_ENV, {})
    settings = nccl.effective(GOOD_ENV, [])
    found = {
        f.subject: f for f in judge_link.check(link, settings, plan, True, {"spark-b": "192.168.177.12"})
    }
    assert found["master-addr"].status is Status.PASS
    assert "spark-b (192.168.177.12) is on enp1s0f1np1" in found["master-addr"].summary


def _tree(tmp_path: Path, name: str) -> Path:
    tree = tmp_path / name
    shutil.copytree(SYS / "spark-healthy", tree)
    return tree


def test_the_link_interfaces_come_from_gids_too(tmp_path):
    """A device whose netdev link is missing under sysfs: its GIDs still name the interface."""
    tree = _tree(tmp_path, "no-netdev-link")
    shutil.rmtree(tree / "sys/class/infiniband/rocep1s0f1/device/net")
    link = sysfs.read_link(str(tree))
    assert link["rdma"]["rocep1s0f1"]["netdevs"] == []
    assert judge_link.link_interfaces(link) == {"enp1s0f1np1", "enP2p1s0f1np1"}


def test_no_address_on_the_link_the_fix_names_its_interfaces(tmp_path):
    tree = _tree(tmp_path, "no-link-address")
    rows = json.loads((tree / "ip-addr.json").read_text())
    link_names = ("enp1s0f1np1", "enP2p1s0f1np1")
    (tree / "ip-addr.json").write_text(json.dumps([r for r in rows if r["ifname"] not in link_names]))
    link = sysfs.read_link(str(tree))
    assert judge_link.preferred(link) is None
    workload = [*TORCHRUN[:6], "192.168.1.50", *TORCHRUN[7:]]
    plan = launch.read(workload, GOOD_ENV, {})
    found = {f.subject: f for f in judge_link.check(link, nccl.effective(GOOD_ENV, []), plan, True)}
    assert found["master-addr"].fix == "advertise the link's address (enP2p1s0f1np1, enp1s0f1np1)"


def test_the_socket_interface_set_counts_as_the_link_for_the_advertised_address():
    """NCCL_SOCKET_IFNAME names the management port: an address there is where NCCL bootstraps."""
    env = {**GOOD_ENV, "NCCL_SOCKET_IFNAME": "enP7s7"}
    found = judge("spark-healthy", env, [*TORCHRUN[:6], "10.0.0.7", *TORCHRUN[7:]])["master-addr"]
    assert found.status is Status.PASS and "10.0.0.7 is on enP7s7" in found.summary


def test_the_gid_is_judged_on_the_devices_nccl_ib_hca_selects():
    env = {**GOOD_ENV, "NCCL_IB_HCA": "=rocep1s0f1"}
    found = judge("spark-healthy", env)["NCCL_IB_GID_INDEX"]
    assert found.summary == "NCCL_IB_GID_INDEX=3 is RoCE v2 on rocep1s0f1 192.168.177.11"


def test_no_socket_interface_off_the_link_is_information():
    found = judge("no-rdma", {})["NCCL_SOCKET_IFNAME"]
    assert found.status is Status.INFO and found.fix is None
    assert found.summary == "NCCL_SOCKET_IFNAME is unset: NCCL picks the first interface that is up"
    assert found.evidence and all(e.startswith("up: ") for e in found.evidence)

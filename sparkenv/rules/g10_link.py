"""G10 per node, one of rules/g10.py's rules: is this node's link ready for a multi-node run? Pure:
link facts (environment/sysfs.py), NCCL's effective settings and the launch in, findings out. Thresholds
and the Spark's topology are data (sparkenv/data/multinode.toml)."""

from __future__ import annotations

import ipaddress
from collections.abc import Mapping
from functools import partial
from typing import TYPE_CHECKING, Any

from sparkenv.core.report import Finding, GotchaId, Status
from sparkenv.environment.launch import Launch, Setting
from sparkenv.environment.nccl import DeviceList
from sparkenv.knowledge import multinode

if TYPE_CHECKING:
    from sparkenv.knowledge.records.multinode import Multinode

_finding = partial(Finding, GotchaId.G10)  # every finding of this module is G10's


def _data() -> Multinode:
    return multinode()


def _ports(link: Mapping[str, Any]) -> list[tuple[str, str, dict[str, Any]]]:
    return [(dev, port, p) for dev, d in link["rdma"].items() for port, p in d["ports"].items()]


def active_devices(link: Mapping[str, Any]) -> list[str]:
    return sorted({dev for dev, _, p in _ports(link) if p.get("state") == "ACTIVE"})


def link_interfaces(link: Mapping[str, Any]) -> set[str]:
    """Netdevs of active RDMA devices: the interfaces that carry the fast link."""
    out: set[str] = set()
    for dev in active_devices(link):
        out.update(link["rdma"][dev].get("netdevs") or [])
        for _, _, p in [x for x in _ports(link) if x[0] == dev]:
            out.update(g["ndev"] for g in p.get("gids", {}).values() if g.get("ndev"))
    return out


def preferred(link: Mapping[str, Any]) -> str | None:
    """The link interface to name in a fix: the first Active twin's netdev (the playbooks' choice)."""
    order = [d for pair in _data().spark.twins for d in pair]
    active = sorted(active_devices(link), key=lambda d: (order.index(d) if d in order else len(order), d))
    for dev in active:
        for name in link["rdma"][dev].get("netdevs") or []:
            if (link["net"].get(name) or {}).get("addresses"):
                return name
    return None


def is_slow(name: str, net: Mapping[str, Any]) -> bool:
    prefixes = _data().link.slow_interface_prefixes
    return bool((net.get(name) or {}).get("wireless")) or name.startswith(tuple(prefixes))


def check(
    link: Mapping[str, Any],
    settings: Mapping[str, tuple[str, str]],
    plan: Launch,
    spark: bool,
    resolved: Mapping[str, str | None] | None = None,
) -> list[Finding]:
    out: list[Finding] = []
    out += _rdma(link, spark)
    out += _transport(link, settings)
    out += _hca(link, settings)
    out += _gid(link, settings)
    out += _ifname(link, settings)
    out += _advertised(link, settings, plan, resolved or {})
    return out


def _rdma(link: Mapping[str, Any], spark: bool) -> list[Finding]:
    data = _data()
    if not link["rdma"]:
        status = Status.WARN if spark else Status.INFO
        return [
            _finding(
                status=status,
                summary="no RDMA device visible (/sys/class/infiniband is empty): NCCL falls back to TCP "
                "sockets, a fraction of the link's bandwidth",
                subject="link",
                evidence=(f"read under {link.get('root', '/')}",),
                fix="in a container: docker run --network host --device /dev/infiniband --ulimit memlock=-1; "
                "on the host: the mlx5 driver and rdma-core",
            )
        ]
    expected = data.spark.port_rate_gbps if spark else data.link.min_rate_gbps
    active = active_devices(link)
    out = [_port(link, dev, port, p, spark, expected) for dev, port, p in _ports(link)]
    if not active:
        out.append(
            _finding(
                status=Status.WARN if spark else Status.INFO,
                summary=f"{len(link['rdma'])} RDMA device(s), none Active: no cable, or the peer is down; "
                "NCCL falls back to TCP sockets",
                subject="link",
                evidence=tuple(sorted(link["rdma"])),
                fix="connect the QSFP cable and bring the link up (ibstat shows State: Active)",
            )
        )
    return out


def _port(
    link: Mapping[str, Any],
    dev: str,
    port: str,
    p: Mapping[str, Any],
    spark: bool,
    expected: float,
) -> Finding:
    """One RDMA port: not Active (INFO), Active below the expected rate or the Spark's MTU (WARN), or
    Active as expected (PASS)."""
    spark_data = _data().spark
    where = f"{dev} port {port}"
    netdevs = link["rdma"][dev].get("netdevs") or []
    evidence = tuple(
        x
        for x in (
            f"state {p.get('state')}, {p.get('phys_state')}",
            f"rate {p.get('rate')}" if p.get("rate") else None,
            f"link layer {p.get('link_layer')}" if p.get("link_layer") else None,
            f"netdev {', '.join(netdevs)}" if netdevs else None,
        )
        if x
    )
    said = partial(_finding, subject=f"rdma:{dev}", evidence=evidence)
    if p.get("state") != "ACTIVE":
        return said(
            Status.INFO, f"{where} is {p.get('state') or 'in no known state'} (no cable in it, or not in use)"
        )
    rate = p.get("rate_gbps")
    if rate is not None and rate < expected:
        return said(
            Status.WARN,
            f"{where} is Active at {rate:g} Gb/s, expected {expected:g}: a degraded link "
            "(NCCL will crawl and large collectives can stall)",
            fix="reseat or replace the QSFP cable, check both ends with ibstat; NVIDIA's "
            "check-connectx-bandwidth (dgx-spark-playbooks#108) measures the rail",
        )
    mtus = [(n, (link["net"].get(n) or {}).get("mtu")) for n in netdevs]
    low = [f"{n} MTU {m}" for n, m in mtus if spark and m and m < spark_data.mtu]
    if low:
        return said(
            Status.WARN,
            f"{where} is Active at {rate:g} Gb/s but {', '.join(low)}: below the "
            f"{spark_data.mtu} the Spark playbooks use, NCCL's throughput drops",
            fix=f"ip link set {netdevs[0]} mtu {spark_data.mtu} on both nodes (and on the switch)",
        )
    return said(Status.PASS, f"{where} is Active at {rate:g} Gb/s")


def _transport(link: Mapping[str, Any], settings: Mapping[str, tuple[str, str]]) -> list[Finding]:
    if not active_devices(link):
        return []
    out = []
    disable = settings.get("NCCL_IB_DISABLE")
    if disable and disable[0].strip() not in ("", "0"):
        out.append(
            _finding(
                status=Status.WARN,
                summary=f"NCCL_IB_DISABLE={disable[0]} ({disable[1]}) with Active RDMA devices: NCCL uses "
                "TCP sockets, a fraction of the link",
                subject="NCCL_IB_DISABLE",
                evidence=(f"active: {', '.join(active_devices(link))}",),
                fix=f"unset NCCL_IB_DISABLE (set in {disable[1]})",
            )
        )
    net = settings.get("NCCL_NET")
    if net and net[0].strip().lower() == "socket":
        out.append(
            _finding(
                status=Status.WARN,
                summary=f"NCCL_NET={net[0]} ({net[1]}) with Active RDMA devices: NCCL uses TCP sockets",
                subject="NCCL_NET",
                fix=f"unset NCCL_NET or set it to IB (set in {net[1]})",
            )
        )
    return out


def _twins_up(link: Mapping[str, Any]) -> list[tuple[str, str]]:
    active = set(active_devices(link))
    return [(a, b) for a, b in _data().spark.twins if a in active and b in active]


def _hca(link: Mapping[str, Any], settings: Mapping[str, tuple[str, str]]) -> list[Finding]:
    if not link["rdma"]:
        return []
    hca = settings.get("NCCL_IB_HCA")
    return [_hca_unset(link) if hca is None else _hca_set(link, *hca)]


def _hca_unset(link: Mapping[str, Any]) -> Finding:
    active = active_devices(link)
    twins = _twins_up(link)
    if twins:
        pair = ",".join(twins[0])
        return _finding(
            status=Status.WARN,
            summary="NCCL_IB_HCA is unset while both halves of a ConnectX-7 port are Active "
            f"({pair}): NCCL may drive one half only, about half the port (dgx-spark-playbooks#102: "
            "~3 GB/s)",
            subject="NCCL_IB_HCA",
            evidence=(f"active: {', '.join(active)}",),
            fix=f"export NCCL_IB_HCA={pair} on every node",
        )
    return _finding(
        status=Status.INFO,
        summary="NCCL_IB_HCA is unset: NCCL uses every Active RDMA device",
        subject="NCCL_IB_HCA",
        evidence=(f"active: {', '.join(active) or 'none'}",),
    )


def _hca_set(link: Mapping[str, Any], value: str, source: str) -> Finding:
    """NCCL_IB_HCA set: it must name this node's devices, Active ones, and both halves of a port."""
    devices = sorted(link["rdma"])
    active = active_devices(link)
    lst = DeviceList.parse(value)
    unknown = lst.unmatched(devices)
    chosen = lst.select(devices)
    said = partial(
        _finding,
        subject="NCCL_IB_HCA",
        evidence=(f"{value} from {source}", f"devices here: {', '.join(devices)}"),
    )
    if unknown:
        return said(
            Status.FAIL,
            f"NCCL_IB_HCA={value} names {', '.join(unknown)}: no such RDMA device on this node "
            "(another machine's names, or a leftover nccl.conf)",
            fix=f"set NCCL_IB_HCA to this node's devices ({', '.join(active) or ', '.join(devices)})",
        )
    if not [d for d in chosen if d in active]:
        return said(
            Status.FAIL,
            f"NCCL_IB_HCA={value} selects only devices that are not Active ({', '.join(chosen) or 'none'})",
            fix=f"name the Active devices: {', '.join(active) or 'none is Active'}",
        )
    half = [(a, b) for a, b in _twins_up(link) if (a in chosen) != (b in chosen)]
    if half:
        a, b = half[0]
        missing = b if a in chosen else a
        return said(
            Status.WARN,
            f"NCCL_IB_HCA={value} leaves out {missing}, the other half of the same port: about "
            "half the port's bandwidth",
            fix=f"export NCCL_IB_HCA={a},{b}",
        )
    return said(
        Status.PASS, f"NCCL_IB_HCA={value} selects Active {', '.join(d for d in chosen if d in active)}"
    )


def _gid(link: Mapping[str, Any], settings: Mapping[str, tuple[str, str]]) -> list[Finding]:
    gid = settings.get("NCCL_IB_GID_INDEX")
    active = active_devices(link)
    if not active:
        return []
    hca = settings.get("NCCL_IB_HCA")
    used = DeviceList.parse(hca[0]).select(active) if hca else active
    if gid is None:
        v2 = sorted(
            {
                i
                for dev, _, p in _ports(link)
                if dev in used
                for i, g in p.get("gids", {}).items()
                if (g.get("type") or "").lower() == "roce v2" and g.get("ipv4")
            },
            key=int,
        )
        return [
            _finding(
                status=Status.INFO,
                summary="NCCL_IB_GID_INDEX is unset: NCCL picks the GID; RoCE v2 IPv4 GIDs here: "
                f"{', '.join(v2) or 'none'}",
                subject="NCCL_IB_GID_INDEX",
            )
        ]
    return [_gid_set(*gid, link, used)]


def _gid_set(value: str, source: str, link: Mapping[str, Any], used: list[str]) -> Finding:
    """NCCL_IB_GID_INDEX as set: a GID at that index on every device used, and a RoCE v2 one."""
    bad, weak, good = [], [], []
    for dev, _, p in _ports(link):
        if dev not in used:
            continue
        entry = p.get("gids", {}).get(value.strip())
        if entry is None:
            bad.append(dev)
        elif (entry.get("type") or "").lower() != "roce v2":
            weak.append(f"{dev} ({entry.get('type')})")
        else:
            good.append(f"{dev} {entry.get('ipv4') or entry.get('gid')}")
    said = partial(_finding, subject="NCCL_IB_GID_INDEX", evidence=(f"{value} from {source}",))
    if bad:
        return said(
            status=Status.FAIL,
            summary=f"NCCL_IB_GID_INDEX={value}: no GID at that index on {', '.join(bad)}: NCCL's "
            "connections fail or hang",
            fix="pick the index of a RoCE v2 GID: grep . /sys/class/infiniband/*/ports/1/gid_attrs/types/*",
        )
    if weak:
        return said(
            status=Status.WARN,
            summary=f"NCCL_IB_GID_INDEX={value} is not a RoCE v2 GID on {', '.join(weak)}: "
            "not routable across subnets",
            fix="pick the index of a RoCE v2 GID (public Spark setups use 3)",
        )
    return said(status=Status.PASS, summary=f"NCCL_IB_GID_INDEX={value} is RoCE v2 on {', '.join(good)}")


def _up(net: Mapping[str, Any], name: str) -> bool:
    return (net.get(name) or {}).get("operstate") in ("up", "unknown")


def _ifname(link: Mapping[str, Any], settings: Mapping[str, tuple[str, str]]) -> list[Finding]:
    net = link["net"]
    names = sorted(n for n in net if n != "lo")
    fast = link_interfaces(link)
    setting = settings.get("NCCL_SOCKET_IFNAME")
    if setting is None:
        return [_ifname_unset(link, names, fast)]
    return [_ifname_set(net, names, fast, *setting)]


def _ifname_unset(link: Mapping[str, Any], names: list[str], fast: set[str]) -> Finding:
    """No NCCL_SOCKET_IFNAME: NCCL takes the first interface up, which may not be the link."""
    net = link["net"]
    up = [
        n
        for n in names
        if _up(net, n) and net[n]["addresses"] and not n.startswith(("docker", "veth", "br-"))
    ]
    other = [n for n in up if n not in fast]
    if fast and other:
        return _finding(
            status=Status.WARN,
            summary=f"NCCL_SOCKET_IFNAME is unset and {', '.join(other)} "
            f"{'are' if len(other) > 1 else 'is'} up beside the link "
            f"({', '.join(sorted(fast))}): NCCL's bootstrap may pick the wrong interface",
            subject="NCCL_SOCKET_IFNAME",
            fix=f"export NCCL_SOCKET_IFNAME={preferred(link)} (the same name on every node)",
        )
    return _finding(
        status=Status.INFO,
        summary="NCCL_SOCKET_IFNAME is unset: NCCL picks the first interface that is up",
        subject="NCCL_SOCKET_IFNAME",
        evidence=tuple(f"up: {n}" for n in up),
    )


def _ifname_set(net: Mapping[str, Any], names: list[str], fast: Any, value: str, source: str) -> Finding:
    """NCCL_SOCKET_IFNAME set: it must select an interface that is up, and the fast link."""
    lst = DeviceList.parse(value)
    chosen = [n for n in lst.select(names) if _up(net, n)]
    said = partial(
        _finding,
        subject="NCCL_SOCKET_IFNAME",
        evidence=(f"{value} from {source}", f"interfaces here: {', '.join(names)}"),
    )
    if not chosen:
        return said(
            Status.FAIL,
            f"NCCL_SOCKET_IFNAME={value} matches no interface that is up on this node: NCCL cannot bootstrap",
            fix=f"name this node's link interface ({', '.join(sorted(fast)) or 'see ip -br addr'})",
        )
    slow = [n for n in chosen if is_slow(n, net)]
    if slow:
        return said(
            Status.WARN,
            f"NCCL_SOCKET_IFNAME={value} selects {', '.join(slow)}: not the fast link",
            fix=f"name the link: {', '.join(sorted(fast)) or '?'}",
        )
    return said(Status.PASS, f"NCCL_SOCKET_IFNAME={value} selects {', '.join(chosen)}")


def _iface_of(address: str, net: Mapping[str, Any]) -> tuple[str | None, bool]:
    """The interface whose subnet holds `address`, and whether the address is that interface's own."""

    try:
        ip = ipaddress.IPv4Address(address)
    except ValueError:
        return None, False
    for name, n in sorted(net.items()):
        for a in n.get("addresses") or []:
            iface = ipaddress.IPv4Interface(a)
            if ip in iface.network:
                return name, iface.ip == ip
    return None, False


def _advertised(
    link: Mapping[str, Any],
    settings: Mapping[str, tuple[str, str]],
    plan: Launch,
    resolved: Mapping[str, str | None],
) -> list[Finding]:
    net = link["net"]
    fast = link_interfaces(link)
    ifname = settings.get("NCCL_SOCKET_IFNAME")
    if ifname:
        fast |= set(DeviceList.parse(ifname[0]).select(sorted(net)))
    hint = _first_addr(net, fast, preferred(link))
    return [_advertised_one(s, net, fast, hint, resolved.get(s.value) or s.value) for s in plan.advertised]


def _advertised_one(
    s: Setting, net: Mapping[str, Any], fast: set[str], hint: str | None, address: str
) -> Finding:
    """One address the launch advertises to the other nodes (a rendezvous, a master address): on the link,
    or where. Each finding is about the option or variable that set it, with that setting as evidence."""
    key = s.source.split("=", 1)[0].split(" ")[-1] if "=" in s.source else s.source.split(" ")[1]
    said = partial(_finding, subject=key.lstrip("-"), evidence=(s.source,))
    shown = s.value if address == s.value else f"{s.value} ({address})"

    try:
        ip = ipaddress.IPv4Address(address)
    except ValueError:
        return said(
            Status.WARN,
            f"{s.source}: {s.value} does not resolve to an IPv4 address here",
            fix="use the link interface's address",
        )
    if ip.is_loopback or ip.is_unspecified:
        return said(
            Status.FAIL,
            f"{s.source}: {shown} cannot be reached from another node",
            fix=f"advertise this link's address ({hint or 'see ip -br addr'})",
        )
    iface, _own = _iface_of(address, net)
    if iface is None:
        return said(Status.INFO, f"{s.source}: {shown} is not on a directly attached subnet (routed)")
    if is_slow(iface, net):
        return said(
            Status.WARN,
            f"{s.source}: {shown} is on {iface}{' (Wi-Fi)' if net[iface].get('wireless') else ''}, not the "
            "link: the rendezvous and NCCL's bootstrap go over it",
            fix=f"advertise the link's address ({hint or ', '.join(sorted(fast))})",
        )
    if fast and iface not in fast:
        return said(
            Status.WARN,
            f"{s.source}: {shown} is on {iface}, not on the link ({', '.join(sorted(fast))})",
            fix=f"advertise the link's address ({hint or '?'})",
        )
    return said(Status.PASS, f"{s.source}: {shown} is on {iface}")


def _first_addr(net: Mapping[str, Any], names: set[str], first: str | None = None) -> str | None:
    for name in sorted(names, key=lambda n: (n != first, n)):
        for a in (net.get(name) or {}).get("addresses") or []:
            return f"{a.split('/')[0]} on {name}"
    return None

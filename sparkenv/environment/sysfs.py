"""Read a node's RDMA devices and network interfaces from /sys (the only place they are reliably visible
inside a container), into a JSON-able dict the G10 link checks judge. Replayable: `root` may be a
recorded tree (tests/fixtures/sys/), with the interfaces' IPv4 addresses from its `ip -j addr` output."""

from __future__ import annotations

import fcntl
import ipaddress
import json
import os
import socket
import struct
from typing import Any

GID_SLOTS = 16  # NCCL_IB_GID_INDEX values worth reading; Sparks use 3 (RoCE v2, IPv4) in public reports
_ZERO_GID = "0000:0000:0000:0000:0000:0000:0000:0000"


def _read(path: str) -> str | None:
    try:
        with open(path, encoding="utf-8", errors="replace") as fh:
            return fh.read(4096).strip()
    except OSError:  # EINVAL for unused GID slots and for the speed of a down interface
        return None


def _listdir(path: str) -> list[str]:
    try:
        return sorted(os.listdir(path))
    except OSError:
        return []


def _rate_gbps(text: str | None) -> float | None:
    """'200 Gb/sec (4X HDR)' -> 200.0."""
    if not text:
        return None
    head = text.split(" ", 1)[0]
    try:
        return float(head)
    except ValueError:
        return None


def _state(text: str | None) -> str | None:
    """'4: ACTIVE' -> 'ACTIVE', '5: LinkUp' -> 'LinkUp'."""
    return text.split(":", 1)[-1].strip() if text else None


def gid_ipv4(gid: str) -> str | None:
    """The IPv4 address of a RoCE v2 IPv4-mapped GID (::ffff:a.b.c.d), else None."""
    try:
        addr = ipaddress.IPv6Address(gid)
    except ValueError:
        return None
    return str(addr.ipv4_mapped) if addr.ipv4_mapped else None


def read_rdma(sys_root: str) -> dict[str, Any]:
    base = os.path.join(sys_root, "class", "infiniband")
    devices: dict[str, Any] = {}
    for dev in _listdir(base):
        d = os.path.join(base, dev)
        ports: dict[str, Any] = {}
        for port in _listdir(os.path.join(d, "ports")):
            p = os.path.join(d, "ports", port)
            gids: dict[str, Any] = {}
            for i in range(GID_SLOTS):
                gid = _read(os.path.join(p, "gids", str(i)))
                if not gid or gid == _ZERO_GID:
                    continue
                gids[str(i)] = {
                    "gid": gid,
                    "type": _read(os.path.join(p, "gid_attrs", "types", str(i))),
                    "ndev": _read(os.path.join(p, "gid_attrs", "ndevs", str(i))),
                    "ipv4": gid_ipv4(gid),
                }
            ports[port] = {
                "state": _state(_read(os.path.join(p, "state"))),
                "phys_state": _state(_read(os.path.join(p, "phys_state"))),
                "rate_gbps": _rate_gbps(_read(os.path.join(p, "rate"))),
                "rate": _read(os.path.join(p, "rate")),
                "link_layer": _read(os.path.join(p, "link_layer")),
                "gids": gids,
            }
        devices[dev] = {
            "hca_type": _read(os.path.join(d, "hca_type")),
            "fw_ver": _read(os.path.join(d, "fw_ver")),
            "board_id": _read(os.path.join(d, "board_id")),
            "netdevs": _listdir(os.path.join(d, "device", "net")),
            "ports": ports,
        }
    return devices


def read_net(sys_root: str) -> dict[str, Any]:
    base = os.path.join(sys_root, "class", "net")
    out: dict[str, Any] = {}
    for name in _listdir(base):
        n = os.path.join(base, name)
        speed = _read(os.path.join(n, "speed"))
        mtu = _read(os.path.join(n, "mtu"))
        out[name] = {
            "operstate": _read(os.path.join(n, "operstate")),
            "speed_mbps": int(speed) if speed and speed.lstrip("-").isdigit() and int(speed) > 0 else None,
            "mtu": int(mtu) if mtu and mtu.isdigit() else None,
            "wireless": os.path.isdir(os.path.join(n, "wireless")),
            "addresses": [],
        }
    return out


def parse_ip_json(text: str) -> dict[str, list[str]]:
    """`ip -j addr` output -> {ifname: ["10.0.0.1/24", …]} (IPv4 only: what launchers advertise)."""
    out: dict[str, list[str]] = {}
    for item in json.loads(text):
        for info in item.get("addr_info") or []:
            if info.get("family") == "inet" and info.get("local"):
                out.setdefault(item.get("ifname", "?"), []).append(
                    f"{info['local']}/{info.get('prefixlen', 32)}"
                )
    return out


def live_addresses(names: list[str]) -> dict[str, list[str]]:
    """IPv4 address/prefix of each interface through the SIOCGIFADDR/SIOCGIFNETMASK ioctls: no `ip`
    binary needed (NGC images do not all carry iproute2)."""

    out: dict[str, list[str]] = {}
    with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as s:
        for name in names:
            req = struct.pack("256s", name.encode()[:15])
            try:
                addr = socket.inet_ntoa(fcntl.ioctl(s.fileno(), 0x8915, req)[20:24])
                mask = socket.inet_ntoa(fcntl.ioctl(s.fileno(), 0x891B, req)[20:24])
            except OSError:
                continue  # no IPv4 address on this interface
            prefix = ipaddress.IPv4Network(f"0.0.0.0/{mask}").prefixlen
            out[name] = [f"{addr}/{prefix}"]
    return out


def read_link(root: str = "/") -> dict[str, Any]:
    """RDMA devices and interfaces of this node (or of a recorded tree at `root`)."""
    sys_root = os.path.join(root, "sys")
    net = read_net(sys_root)
    recorded = os.path.join(root, "ip-addr.json")
    if root != "/" and os.path.exists(recorded):
        with open(recorded, encoding="utf-8") as fh:
            addresses = parse_ip_json(fh.read())
    else:
        addresses = live_addresses(list(net))
    for name, addrs in addresses.items():
        if name in net:
            net[name]["addresses"] = addrs
    return {"root": root, "rdma": read_rdma(sys_root), "net": net}

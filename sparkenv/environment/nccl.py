"""NCCL's settings as NCCL will see them (the environment over nccl.conf files), and its device-list
syntax, shared by the link checks and the cross-node agreement."""

from __future__ import annotations

import os
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any

from sparkenv.core import safe_read
from sparkenv.knowledge import multinode


def conf_paths(env: Mapping[str, str]) -> list[str]:
    """Where NCCL looks for settings files: $NCCL_CONF_FILE, else ~/.nccl.conf; then /etc/nccl.conf."""
    files = multinode().nccl.conf_files
    first = env.get("NCCL_CONF_FILE")
    paths = [first] if first else [os.path.expanduser(files[0])]
    return [*paths, *files[1:]]


def parse_conf(text: str) -> dict[str, str]:
    """`KEY=VALUE` lines, `#` comments (NCCL's own format)."""
    out: dict[str, str] = {}
    for line in text.splitlines():
        line = line.split("#", 1)[0].strip()
        key, eq, value = line.partition("=")
        if eq and key.strip():
            out[key.strip()] = value.strip()
    return out


CONF_LIMIT = 1 << 20  # an nccl.conf is a few lines


def read_confs(env: Mapping[str, str]) -> list[dict[str, Any]]:
    """The nccl.conf files that exist, with what they set (probe side). One that exists but cannot be
    read (a FIFO, a device, no permission, over the size cap) is listed with `error`: NCCL may read it
    differently, so the link lines say so; a FIFO no longer hangs the probe, which dropped every G10
    line at the deadline."""

    found: list[dict[str, Any]] = []
    for path in conf_paths(env):
        if not os.path.lexists(path):
            continue
        try:
            text = safe_read.read_bytes(path, what="an nccl.conf", limit=CONF_LIMIT).decode(
                "utf-8", "replace"
            )
        except safe_read.UnreadableFile as exc:
            found.append({"path": path, "settings": {}, "error": exc.reason})
            continue
        found.append({"path": path, "settings": parse_conf(text)})
    return found


def effective(env: Mapping[str, str], confs: Iterable[Mapping[str, Any]]) -> dict[str, tuple[str, str]]:
    """{setting: (value, where it came from)}: the environment wins over files, earlier files over later."""
    out: dict[str, tuple[str, str]] = {}
    for conf in reversed(list(confs)):
        for key, value in (conf.get("settings") or {}).items():
            if key.startswith("NCCL_"):
                out[key] = (value, str(conf.get("path")))
    for key, value in env.items():
        if key.startswith("NCCL_"):
            out[key] = (value, "environment")
    return out


@dataclass(frozen=True)
class DeviceList:
    """NCCL_IB_HCA / NCCL_SOCKET_IFNAME: `name[:port],…` matched by prefix; `=` exact; `^` excludes."""

    entries: tuple[tuple[str, str | None], ...]
    exact: bool
    exclude: bool

    @classmethod
    def parse(cls, text: str) -> DeviceList:
        text = text.strip()
        exclude = text.startswith("^")
        text = text.removeprefix("^")
        exact = text.startswith("=")
        text = text.removeprefix("=")
        entries = []
        for item in text.split(","):
            name, _, port = item.strip().partition(":")
            if name:
                entries.append((name, port or None))
        return cls(tuple(entries), exact, exclude)

    def matches(self, name: str) -> bool:
        hit = any((name == e if self.exact else name.startswith(e)) for e, _ in self.entries)
        return hit != self.exclude

    def select(self, names: Iterable[str]) -> list[str]:
        return [n for n in names if self.matches(n)]

    def unmatched(self, names: Iterable[str]) -> list[str]:
        """Entries (of an including list) that name no device here: a typo or another machine's names."""
        if self.exclude:
            return []
        names = list(names)
        return [
            e for e, _ in self.entries if not any((n == e if self.exact else n.startswith(e)) for n in names)
        ]

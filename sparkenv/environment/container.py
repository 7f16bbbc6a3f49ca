"""Is this machine a container? Markers only; no marker means unknown, not bare host."""

from __future__ import annotations

import os
import re
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path

_CGROUP_V1 = re.compile(r"\b(docker|containerd|kubepods|libpod|lxc|podman|crio)\b")


@dataclass(frozen=True)
class ContainerFacts:
    markers: tuple[str, ...]  # e.g. "/.dockerenv exists", "$container=podman"
    checked: tuple[str, ...]  # every place looked at, for the evidence of an unknown

    @property
    def inside(self) -> bool | None:
        return True if self.markers else None


def detect(root: Path = Path("/"), environ: Mapping[str, str] | None = None) -> ContainerFacts:
    """Read the container markers under `root`; /proc and the environment only for the live root."""
    live = root == Path("/")
    environ = os.environ if environ is None and live else (environ or {})
    markers: list[str] = []
    checked = ["/.dockerenv", "/run/.containerenv"]
    for rel in (".dockerenv", "run/.containerenv"):
        if (root / rel).exists():
            markers.append(f"/{rel} exists")
    if environ.get("container"):
        markers.append(f"$container={environ['container']}")
    checked.append("$container")
    if live:
        checked.append("/proc/1/cgroup")
        cgroup = _read("/proc/1/cgroup")
        if cgroup is not None:
            v1 = _CGROUP_V1.search(cgroup)
            if v1:
                markers.append(f"/proc/1/cgroup names {v1.group(1)} (cgroup v1)")
            elif cgroup.strip() == "0::/":
                # cgroup v2 with a cgroup namespace: PID 1 sits at the namespace root; on a host it is
                # in /init.scope.
                markers.append("/proc/1/cgroup is 0::/ (cgroup v2 namespace)")
        checked.append("/proc/1/mountinfo")
        mountinfo = _read("/proc/1/mountinfo")
        if mountinfo is not None:
            for line in mountinfo.splitlines():
                fields = line.split()
                if len(fields) > 8 and fields[4] == "/" and " - overlay " in line:
                    markers.append("root filesystem is overlay (container image layers)")
                    break
    return ContainerFacts(tuple(markers), tuple(checked))


def _read(path: str) -> str | None:
    try:
        with open(path, encoding="utf-8", errors="replace") as fh:
            return fh.read(65536)
    except OSError:
        return None

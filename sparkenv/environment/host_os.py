"""The Spark outside any container, read from files: the OS and DGX OS release, the firmware's product
name, the CPU frequency policy of each core, the Container Device Interface specs, the out-of-memory
daemons that run. Pure readers (every read bounded, a missing file is an absent value, never an error);
`sparkenv host` records what they return in its facts snapshot (`host_setup`)."""

from __future__ import annotations

import os
import re
from typing import Any

from sparkenv.core.safe_read import UnreadableFile, read_text

OS_RELEASE = "/etc/os-release"
DGX_RELEASE = "/etc/dgx-release"
PRODUCT_NAME = "/sys/class/dmi/id/product_name"
CPU_ROOT = "/sys/devices/system/cpu"
CPPC_AUTO_SEL = "/sys/module/cppc_cpufreq/parameters/auto_sel_mode"
CDI_DIRS = ("/etc/cdi", "/var/run/cdi")  # the NVIDIA Container Toolkit's two places for a spec
OOM_DAEMONS = ("earlyoom", "systemd-oomd")
_ASSIGNMENT = re.compile(r"^\s*([A-Za-z_][A-Za-z0-9_]*)=(.*)$")


def small(path: str, limit: int = 64 << 10) -> str | None:
    """A small text file's content, or None where it is missing or unreadable."""
    try:
        return read_text(path, what=path, limit=limit, errors="replace")
    except UnreadableFile:
        return None


def key_values(text: str | None) -> dict[str, str]:
    """os-release style KEY=VALUE lines (values quoted or not) -> {KEY: value}."""
    out: dict[str, str] = {}
    for line in (text or "").splitlines():
        m = _ASSIGNMENT.match(line)
        if m:
            value = m.group(2).strip()
            if len(value) >= 2 and value[0] == value[-1] and value[0] in "'\"":
                value = value[1:-1]
            out[m.group(1)] = value
    return out


def platform() -> dict[str, Any]:
    """{"os_release": {...}, "dgx_release": {...} or None, "product_name": str or None}."""
    dgx = small(DGX_RELEASE)
    product = small(PRODUCT_NAME, 4096)
    return {
        "os_release": key_values(small(OS_RELEASE)),
        "dgx_release": key_values(dgx) if dgx is not None else None,
        "product_name": product.strip() if product else None,
    }


def _khz(folder: str, name: str) -> int | None:
    text = small(os.path.join(folder, name), 4096)
    value = (text or "").strip()
    return int(value) if value.isdigit() else None


def cpu_policy() -> dict[str, Any]:
    """Every core's frequency policy: {"cores": [{"cpu", "governor", "driver", "cur_khz", "min_khz",
    "max_khz"}], "auto_sel_mode": "Y"/"N"/None}; no "cores" where sysfs has no cpufreq (a VM)."""
    cores = []
    try:
        names = sorted(
            (n for n in os.listdir(CPU_ROOT) if re.fullmatch(r"cpu\d+", n)), key=lambda n: int(n[3:])
        )
    except OSError:
        names = []
    for name in names:
        folder = os.path.join(CPU_ROOT, name, "cpufreq")
        if not os.path.isdir(folder):
            continue
        cores.append(
            {
                "cpu": int(name[3:]),
                "governor": (small(os.path.join(folder, "scaling_governor"), 4096) or "").strip() or None,
                "driver": (small(os.path.join(folder, "scaling_driver"), 4096) or "").strip() or None,
                "cur_khz": _khz(folder, "scaling_cur_freq"),
                "min_khz": _khz(folder, "cpuinfo_min_freq"),
                "max_khz": _khz(folder, "cpuinfo_max_freq"),
            }
        )
    auto = small(CPPC_AUTO_SEL, 4096)
    return {"cores": cores, "auto_sel_mode": auto.strip() if auto is not None else None}


def core_khz(cpu: int) -> int | None:
    """One core's current frequency as cpufreq reports it (kHz), or None."""
    return _khz(os.path.join(CPU_ROOT, f"cpu{cpu}", "cpufreq"), "scaling_cur_freq")


def cdi_specs(dirs: tuple[str, ...] = CDI_DIRS) -> dict[str, Any]:
    """The CDI specs in `dirs`: {"dirs": [...], "specs": [{"path", "kind", "devices"}], "errors": [...]}.
    A spec is YAML or JSON (JSON is YAML); what cannot be read is an error entry naming the file."""
    specs: list[dict[str, Any]] = []
    errors: list[str] = []
    for folder in dirs:
        try:
            names = sorted(os.listdir(folder))
        except FileNotFoundError:
            continue
        except OSError as exc:
            errors.append(f"{folder}: {exc.strerror}")
            continue
        for name in names:
            if not name.endswith((".yaml", ".yml", ".json")):
                continue
            path = os.path.join(folder, name)
            try:
                data = _yaml(read_text(path, what="a CDI spec", limit=4 << 20))
            except (UnreadableFile, ValueError) as exc:
                errors.append(f"{path}: {exc}"[:300])
                continue
            devices = [str(d.get("name")) for d in data.get("devices") or [] if isinstance(d, dict)]
            specs.append({"path": path, "kind": str(data.get("kind") or ""), "devices": devices})
    return {"dirs": list(dirs), "specs": specs, "errors": errors}


def _yaml(text: str) -> dict[str, Any]:
    import yaml

    try:
        data = yaml.safe_load(text)
    except yaml.YAMLError as exc:
        raise ValueError(f"not YAML: {str(exc).splitlines()[0]}") from None
    if not isinstance(data, dict):
        raise ValueError("not a CDI spec (no mapping at the top)")
    return data


def running(names: tuple[str, ...] = OOM_DAEMONS) -> dict[str, bool]:
    """Which of these programs run now, by /proc/<pid>/comm (readable for every user's processes)."""
    found = dict.fromkeys(names, False)
    try:
        entries = os.listdir("/proc")
    except OSError:
        return found
    for pid in entries:
        if not pid.isdigit():
            continue
        try:
            with open(f"/proc/{pid}/comm", "rb") as fh:
                comm = fh.read(64).decode("utf-8", "replace").strip()
        except OSError:
            continue
        if comm in found:
            found[comm] = True
    return found


def free_space(path: str) -> dict[str, Any]:
    """{"path", "free_bytes", "total_bytes"} of the filesystem holding `path`, or {"path", "error"}."""
    try:
        st = os.statvfs(path)
    except OSError as exc:
        return {"path": path, "error": f"{path}: {exc.strerror}"}
    return {"path": path, "free_bytes": st.f_bavail * st.f_frsize, "total_bytes": st.f_blocks * st.f_frsize}

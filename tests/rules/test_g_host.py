"""The host stage's rules (`sparkenv host`: rules/host_system.py, rules/host_docker.py, one rule per
gotcha in rules/gN.py), row by row over snapshots of real machines and public field reports
(tests/fixtures/host/, sources in SOURCES.md), each changed where a row says so."""

from __future__ import annotations

import copy
import functools
import json
from pathlib import Path
from typing import Any

import pytest
from rule_table import Row, check, ids

from sparkenv.core.report import Status
from sparkenv.facts.host import HostFacts

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures" / "host"


@functools.cache
def _load(name: str) -> dict[str, Any]:
    return json.loads((FIXTURES / f"{name}.json").read_text())


def snap(name: str = "gb10-healthy", **changes: Any) -> HostFacts:
    """The snapshot, with `a__b__c=value` setting raw["a"]["b"]["c"] (None deletes the key)."""
    raw = copy.deepcopy(_load(name))
    for path, value in changes.items():
        *parents, last = path.split("__")
        node = raw
        for p in parents:
            node = node.setdefault(p, {})
        if value is None:
            node.pop(last, None)
        else:
            node[last] = value
    return HostFacts(raw)


OFF_SPARK = {  # an x86 machine without GPU or driver, as this test machine reads
    "host__machine": "x86_64",
    "host__kernel": "6.18.44",
    "driver": {"proc_version": None, "version": None, "error": "no such file", "taint": None},
    "gpu": {"available": False, "source": "nvml", "error": "libnvidia-ml.so.1 not found"},
    "host_setup__platform": {
        "os_release": {"PRETTY_NAME": "Debian GNU/Linux 12 (bookworm)"},
        "dgx_release": None,
        "product_name": None,
    },
}
NO_DOCKER = {
    "host_setup__socket": {
        "host": "unix:///var/run/docker.sock",
        "path": "/var/run/docker.sock",
        "exists": False,
    },
    "host_setup__docker": {"answered": False, "error": "no socket at unix:///var/run/docker.sock"},
}
EMPTY_SPEC = {"path": "/etc/cdi/nvidia.yaml", "kind": "nvidia.com/gpu", "devices": ["all"]}
LOW_CORES = {"host_setup__cpu__load__cur_khz": 338000}

G1, G3, G4, G10 = "host_system.g1", "host_system.g3", "host_system.g4", "host_system.g10"
G9 = "host_docker.g9"

ROWS = [
    # G1: the driver and its module, the known host issues
    Row(G1, "open module, NVML sees the GB10", lambda c: snap(), "nvidia-driver", Status.PASS, None,
        "driver 580.126.09, open kernel module; NVML sees NVIDIA GB10"),
    Row(G1, "nothing known about this kernel", lambda c: snap(), "host:known-issues", Status.PASS, None,
        "kernel 6.17.0-1014-nvidia, DGX OS 7.4.0"),
    Row(G1, "proprietary module on a Spark", lambda c: snap("gb10-proprietary-module"),
        "host:proprietary-module-gb10", Status.FAIL, "nvidia-driver-580-open",
        "proprietary NVIDIA kernel module"),
    Row(G1, "proprietary module: the driver line leaves it to the known issue",
        lambda c: snap("gb10-proprietary-module"), "nvidia-driver", None),
    Row(G1, "proprietary module off a Spark (Hopper: supported)",
        lambda c: snap("gb10-proprietary-module", **{
            **OFF_SPARK, "driver": _load("gb10-proprietary-module")["driver"],
            "gpu": {"available": True, "gpus": [{"name": "NVIDIA H200", "compute_cap": "9.0"}]}}),
        "nvidia-driver", Status.PASS, None, "proprietary kernel module"),
    Row(G1, "the 6.17.0-1008 kernel", lambda c: snap("gb10-6.17.0-1008-gpu-lost"),
        "host:gpu-lost-6.17.0-1008", Status.WARN, "full-upgrade", "6.17.0-1008-nvidia"),
    Row(G1, "module loaded, NVML finds no GPU on a Spark", lambda c: snap("gb10-6.17.0-1008-gpu-lost"),
        "nvidia-driver", Status.FAIL, "dmesg", "NVML finds no GPU"),
    Row(G1, "no module on a Spark", lambda c: snap(
        driver={"proc_version": None, "version": None, "error": "no such file"},
        gpu={"available": False, "source": "nvml", "error": "libnvidia-ml.so.1 not found"}),
        "nvidia-driver", Status.FAIL, "modprobe nvidia", "no NVIDIA kernel module loaded"),
    Row(G1, "no driver off a Spark", lambda c: snap(**OFF_SPARK), "nvidia-driver", Status.SKIP, None,
        "/proc/driver/nvidia/version: no such file"),
    # G1: the DGX OS release (/etc/dgx-release) against data/hosts.toml [[dgx_os]]
    Row(G1, "DGX OS 7.6.0 with its kernel and driver", lambda c: snap("gb10-dgx-os-7.6.0"), "host:dgx-os",
        Status.PASS, None, "DGX OS 7.6.0 (2026-09-14): kernel 7.0.0-1019-nvidia, driver 580.178.04"),
    Row(G1, "DGX OS 7.6.0 running the older kernel and driver", lambda c: snap("gb10-dgx-os-7.6.0-partial"),
        "host:dgx-os", Status.INFO, "full-upgrade", "this machine runs kernel 6.17.0-1014-nvidia"),
    Row(G1, "the OTA version is the installed one", lambda c: snap(
        "gb10-dgx-os-7.6.0", host_setup__platform__dgx_release={
            "DGX_SWBUILD_VERSION": "7.2.3", "DGX_OTA_VERSION": "7.6.0"}),
        "host:dgx-os", Status.PASS, None, "DGX OS 7.6.0"),
    Row(G1, "DGX OS 7.5.0: its kernel is not compared (UNVERIFIED)", lambda c: snap(
        host_setup__platform__dgx_release={"DGX_SWBUILD_VERSION": "7.5.0"},
        driver__version="580.159.03"),
        "host:dgx-os", Status.PASS, None, "kernel 6.17.0-1026-nvidia UNVERIFIED"),
    Row(G1, "DGX OS 7.5.0 with a later driver package (580.173.02)", lambda c: snap(
        host_setup__platform__dgx_release={"DGX_SWBUILD_VERSION": "7.5.0"},
        driver__version="580.173.02"),
        "host:dgx-os", Status.INFO, None, "driver 580.173.02 (newer): packages newer than the release"),
    Row(G1, "a release newer than the data", lambda c: snap("gb10-dgx-os-too-new"), "host:dgx-os",
        Status.INFO, "[[dgx_os]] row for 7.9.0", "DGX OS release 7.9.0 is newer than any sparkenv knows"),
    Row(G1, "a release older than the data", lambda c: snap(), "host:dgx-os", Status.SKIP, None,
        "DGX OS 7.4.0 is not in data/hosts.toml"),
    Row(G1, "not DGX OS", lambda c: snap(**OFF_SPARK), "host:dgx-os", Status.SKIP, None,
        "no /etc/dgx-release"),
    # G3: memory protection
    Row(G3, "systemd-oomd runs", lambda c: snap(), "host:oom-protection", Status.PASS),
    Row(G3, "no OOM daemon", lambda c: snap(host_setup__oom={"earlyoom": False, "systemd-oomd": False}),
        "host:oom-protection", Status.WARN, "systemd-oomd", "neither earlyoom nor systemd-oomd"),
    # G4: the cores under load
    Row(G4, "full speed under the busy loop", lambda c: snap(), "host:cpu-frequency", Status.PASS, None,
        "governor performance"),
    Row(G4, "autonomous mode off on a Spark", lambda c: snap("gb10-cppc-autonomous-off"),
        "host:cpu-frequency", Status.WARN, "cppc_cpufreq.auto_sel_mode=1", "338 MHz of its 2808 MHz"),
    Row(G4, "held low under performance", lambda c: snap(**LOW_CORES), "host:cpu-frequency", Status.WARN,
        "full-upgrade", "stay low under load"),
    Row(G4, "powersave", lambda c: snap(host_setup__cpu__cores=[
        {"cpu": 0, "governor": "powersave", "driver": "cppc_cpufreq", "cur_khz": 338000, "min_khz": 338000,
         "max_khz": 2808000}]), "host:cpu-frequency", Status.WARN, "scaling_governor", "powersave"),
    Row(G4, "no cpufreq (a VM)", lambda c: snap(host_setup__cpu={"cores": [], "auto_sel_mode": None}),
        "host:cpu-frequency", Status.SKIP, None, "no cpufreq"),
    # G9: Docker
    Row(G9, "a member of the docker group", lambda c: snap(), "docker:socket", Status.PASS),
    Row(G9, "not in the docker group", lambda c: snap("gb10-user-not-in-docker-group"), "docker:socket",
        Status.FAIL, "sudo usermod -aG docker $USER", "may not use the Docker socket"),
    Row(G9, "added to the group, not logged in again",
        lambda c: snap("gb10-user-not-in-docker-group", host_setup__socket__listed_in_group=True),
        "docker:socket", Status.FAIL, "newgrp docker", "this session started before"),
    Row(G9, "no Docker on a Spark", lambda c: snap(**NO_DOCKER), "docker:socket", Status.FAIL,
        "systemctl enable --now docker", "no Docker engine on this machine"),
    Row(G9, "no Docker off a Spark", lambda c: snap(**NO_DOCKER, **OFF_SPARK), "docker:socket", Status.SKIP,
        None, "on a DGX Spark this is a FAIL"),
    Row(G9, "the engine answers", lambda c: snap(), "docker:engine", Status.PASS, None, "Docker 28.3.3"),
    Row(G9, "the socket is there, the engine is not",
        lambda c: snap(host_setup__docker={"answered": False, "error": "no answer within the timeout"}),
        "docker:engine", Status.FAIL, "systemctl", "does not answer"),
    Row(G9, "the nvidia runtime", lambda c: snap(), "docker:nvidia-runtime", Status.PASS, None,
        "the nvidia runtime"),
    Row(G9, "CDI only", lambda c: snap(host_setup__docker__runtimes=["runc"]), "docker:nvidia-runtime",
        Status.PASS, None, "a CDI spec naming the GPU"),
    Row(G9, "neither runtime nor CDI", lambda c: snap("gb10-no-nvidia-runtime"), "docker:nvidia-runtime",
        Status.FAIL, "nvidia-ctk runtime configure --runtime=docker", "no NVIDIA runtime"),
    Row(G9, "a CDI spec naming no GPU", lambda c: snap(
        host_setup__docker__runtimes=["runc"],
        host_setup__cdi={"specs": [EMPTY_SPEC]}),
        "docker:nvidia-runtime", Status.FAIL, "nvidia-ctk cdi generate", "names no GPU"),
    Row(G9, "no driver off a Spark: no GPU to give", lambda c: snap(**OFF_SPARK), "docker:nvidia-runtime",
        Status.SKIP, None, "no NVIDIA driver here"),
    Row(G9, "the container sees the GB10", lambda c: snap(host_setup__container={
        "image": "nvcr.io/nvidia/pytorch:25.11-py3", "exit_code": 0,
        "output": ["GPU 0: NVIDIA GB10 (UUID: GPU-0f059bf0-a212-94c1-44a7-1068a6c6be66)"]}),
        "docker:gpu-container", Status.PASS, None, "sees 1 GPU(s): GPU 0: NVIDIA GB10"),
    Row(G9, "an amd64 image", lambda c: snap("gb10-amd64-image"), "docker:gpu-container", Status.FAIL,
        "arm64", "exec format error"),
    Row(G9, "no runtime off a Spark: the container says it", lambda c: snap(
        "gb10-no-nvidia-runtime", **OFF_SPARK), "docker:gpu-container", Status.FAIL,
        "nvidia-ctk runtime configure", "cannot be given the GPU"),
    Row(G9, "no runtime on a Spark: the runtime line says it", lambda c: snap("gb10-no-nvidia-runtime"),
        "docker:gpu-container", Status.SKIP, None, "see docker:nvidia-runtime"),
    Row(G9, "no --image", lambda c: snap(), "docker:gpu-container", Status.SKIP, None, "no --image given"),
    Row(G9, "container markers", lambda c: snap(container={"markers": ["/.dockerenv exists"]}), "host:where",
        Status.INFO, "on the Spark itself", "container markers seen"),
    Row(G9, "no container markers", lambda c: snap(), "host:where", None),
    Row(G9, "room for images", lambda c: snap(), "docker:disk", Status.PASS),
    Row(G9, "little room for images", lambda c: snap(host_setup__disk__free_bytes=5 << 30), "docker:disk",
        Status.WARN, "docker system prune", "5.0 GiB free"),
    Row(G9, "a gate snapshot has no host part", lambda c: snap(host_setup=None), "docker", Status.SKIP, None,
        "taken by the gate"),
    # G10: CMA
    Row(G10, "a contiguous memory area", lambda c: snap(), "host:cma", Status.PASS, None,
        "CmaTotal: 65536 kB"),
    Row(G10, "CmaTotal 0 on 7.0.0-1019", lambda c: snap("gb10-7.0.0-1019-cma-zero"), "host:cma-zero",
        Status.WARN, "6.17 DGX OS kernel", "RDMA memory registration fails"),
    Row(G10, "the known issue speaks for it", lambda c: snap("gb10-7.0.0-1019-cma-zero"), "host:cma", None),
    Row(G10, "CmaTotal 0 on another kernel", lambda c: snap(meminfo__CmaTotal=0), "host:cma", Status.WARN,
        "cma=", "CmaTotal: 0 kB"),
    Row(G10, "no CMA off a Spark", lambda c: snap(**OFF_SPARK, meminfo__CmaTotal=None), "host:cma",
        Status.SKIP, None, "only for RDMA between two Sparks"),
]  # fmt: skip


@pytest.mark.parametrize("row", ROWS, ids=ids(ROWS))
def test_host_rules(row, ctx):
    check(row, ctx)

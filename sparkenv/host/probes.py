"""The host's probes: the only code of `sparkenv host` that touches the machine. Each reads with a bound
(a timeout, a size limit) and returns a JSON-able value; a probe that raises is an entry in
probe_errors, as in the gate's snapshot (the same schema, sparkenv/data/facts.schema.json): the driver,
/proc/meminfo and NVML sections are the gate's own, read by the gate's readers; what only the host sees
is under `host_setup`."""

from __future__ import annotations

import os
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from sparkenv.core import children
from sparkenv.core.safe_read import read_text
from sparkenv.environment import container, host_driver, host_os, nvml, parsers
from sparkenv.environment.facts_file import FACTS_SCHEMA  # the gate's: one snapshot format
from sparkenv.host import docker_probe

# A busy loop pinned to one core, ended by itself after argv[2] seconds (and killed after the reading).
BUSY = (
    "import os, sys, time\n"
    "os.sched_setaffinity(0, {int(sys.argv[1])})\n"
    "end = time.monotonic() + float(sys.argv[2])\n"
    "while time.monotonic() < end:\n"
    "    pass\n"
)


@dataclass(frozen=True)
class Options:
    image: str | None = None  # run one container of it with the GPUs requested
    timeout_s: float = 60.0  # the test container's bound
    docker_timeout_s: float = 5.0  # each Engine API call
    load_s: float = 1.0  # the busy loop's length (CPU frequency under load)


def gather(opts: Options) -> dict[str, Any]:
    started = time.monotonic()
    facts: dict[str, Any] = {
        "schema": FACTS_SCHEMA,
        "taken_at": time.strftime("%Y-%m-%dT%H:%M:%S+00:00", time.gmtime()),
        "host": {"machine": os.uname().machine, "kernel": os.uname().release, "python": sys.executable},
    }
    errors: dict[str, str] = {}

    def take(name: str, probe: Callable[[], Any], into: dict[str, Any]) -> Any:
        try:
            into[name] = probe()
        except Exception as exc:  # one probe's failure is its ERROR line, never the whole command's
            errors[name] = f"{type(exc).__name__}: {exc}"[:300]
        return into.get(name)

    take("driver", probe_driver, facts)
    take("meminfo", probe_meminfo, facts)
    take("gpu", probe_gpu, facts)
    take("container", probe_container, facts)
    setup: dict[str, Any] = {}

    host = os.environ.get("DOCKER_HOST") or docker_probe.DEFAULT_HOST
    take("user", docker_probe.user, setup)
    take("platform", host_os.platform, setup)
    take("socket", lambda: docker_probe.socket_facts(host), setup)
    engine = take("docker", lambda: docker_probe.engine_facts(host, opts.docker_timeout_s), setup) or {}
    take("cdi", lambda: host_os.cdi_specs(_cdi_dirs(engine)), setup)
    if opts.image:
        take("container", lambda: docker_probe.gpu_container(host, str(opts.image), opts.timeout_s), setup)
    take("cpu", lambda: probe_cpu(opts.load_s), setup)
    take("oom", host_os.running, setup)
    take("disk", lambda: host_os.free_space(_image_folder(engine)), setup)
    facts["host_setup"] = setup
    facts["probe_errors"] = errors
    facts["gather_s"] = round(time.monotonic() - started, 3)
    return facts


def _cdi_dirs(engine: dict[str, Any]) -> tuple[str, ...]:
    """The engine's CDI spec folders where it names them, and the toolkit's two usual ones."""
    return tuple(dict.fromkeys([*(engine.get("cdi_spec_dirs") or []), *host_os.CDI_DIRS]))


def _image_folder(engine: dict[str, Any]) -> str:
    """Where images are unpacked: the engine's root folder, or Docker's default where it did not say."""
    root = engine.get("root_dir") or "/var/lib/docker"
    return root if os.path.exists(root) else "/var/lib" if os.path.exists("/var/lib") else "/"


def probe_driver() -> dict[str, Any]:
    """The gate's driver reader (the loaded module's version line) and the module's taint flags, which
    tell its flavour where the version line is hidden."""

    found = host_driver.read()
    found["taint"] = host_driver.taint()
    return found


def probe_meminfo() -> dict[str, int]:

    return parsers.parse_meminfo(read_text("/proc/meminfo", what="/proc/meminfo", limit=1 << 20))


def probe_container() -> dict[str, Any]:
    """The gate's container markers (its `container` section): `sparkenv host` belongs outside one."""

    found = container.detect()
    return {"markers": list(found.markers), "checked": list(found.checked)}


def probe_gpu() -> dict[str, Any]:
    """The gate's NVML probe: the GPUs, their names and capability, the driver NVML reports."""

    return nvml.probe(0.0, time.monotonic() + 10.0)


def probe_cpu(load_s: float) -> dict[str, Any]:
    """Every core's policy, then the fastest core's frequency while one busy loop runs on it alone.

    The loop is pinned to that core and ends by itself after `load_s` seconds; the frequency is read
    a few times after the governor had a moment to react, and the highest reading kept (cpufreq's
    cur is an average over a short window). The child is killed and reaped whatever happens."""
    policy = host_os.cpu_policy()
    cores = [c for c in policy["cores"] if c.get("max_khz")]
    if not cores or load_s <= 0:
        return policy
    fastest = max(cores, key=lambda c: (c["max_khz"], -c["cpu"]))
    cpu = int(fastest["cpu"])
    try:
        proc = children.spawn([sys.executable, "-I", "-c", BUSY, str(cpu), str(load_s)])
    except OSError as exc:
        return {**policy, "load": {"cpu": cpu, "error": f"cannot start the busy loop: {exc.strerror}"}}
    readings: list[int] = []
    try:
        time.sleep(min(0.4, load_s / 2))
        for _ in range(4):
            khz = host_os.core_khz(cpu)
            if khz:
                readings.append(khz)
            time.sleep(min(0.1, load_s / 10))
    finally:
        children.stop(proc, reap_s=2.0)
    load = {
        "cpu": cpu,
        "seconds": load_s,
        "how": "one busy loop pinned to this core",
        "readings_khz": readings,
    }
    if readings:
        load["cur_khz"] = max(readings)
    return {**policy, "load": load}

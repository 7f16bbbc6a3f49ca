"""G9 at the host stage (`sparkenv host`): can this user start a container here, with the GPU in it?
Docker's socket and this user's right to it, the engine answering, the NVIDIA runtime or a CDI spec
naming the GPU, one test container's view of the GPU (with --image), free space for images. Pure
functions of HostFacts; the fixes and their sources come from data/hosts.toml [checks].

No Docker at all: FAIL on a Spark, where containers are the way to run (G9: NGC images carry the CUDA 13
stack a bare pip install gets wrong), SKIP elsewhere (said so), since sparkenv's other stages still
work without it."""

from __future__ import annotations

from typing import TYPE_CHECKING

from sparkenv.core.report import Finding, GotchaId, Status
from sparkenv.knowledge import hosts
from sparkenv.rules.host_system import not_in_snapshot

if TYPE_CHECKING:
    from sparkenv.facts.host import HostFacts

G9 = GotchaId.G9
GIB = 1 << 30


def _f(status: Status, summary: str, subject: str, evidence: tuple[str, ...] = (), fix: str | None = None):
    return Finding(G9, status, summary, subject, evidence, fix)


def _not_read(f: HostFacts, subject: str) -> list[Finding] | None:
    if f.has_setup:
        return None
    return [not_in_snapshot(G9, subject)]


def _no_engine(f: HostFacts, subject: str) -> list[Finding] | None:
    """The SKIP of a check that needs the engine, where docker_access or docker_engine said why not."""
    if f.engine.get("answered"):
        return None
    return [
        _f(
            Status.SKIP,
            "needs a Docker engine that answers this user (see docker:socket, docker:engine)",
            subject,
        )
    ]


def docker_access(f: HostFacts) -> list[Finding]:
    """The socket exists and this user may use it (root, or a member of its group in this session)."""
    subject = "docker:socket"
    if (skip := _not_read(f, subject)) is not None:
        return skip
    checks = hosts().checks
    sock, user = f.socket, f.part("user") or {}
    who = f"user {user.get('name', '?')} (groups: {', '.join(user.get('groups') or []) or 'none'})"
    if sock.get("path") is None:
        return [
            _f(Status.INFO, f"Docker is reached at {sock.get('host')}: the socket is not checked", subject)
        ]
    if f.docker_absent:
        why = f"no Docker engine on this machine (no socket at {sock['path']})"
        if f.is_spark:
            return [
                _f(
                    Status.FAIL,
                    f"{why}: on a Spark, containers are how the CUDA 13 stack runs (NGC images)",
                    subject,
                    fix=checks.docker_start_fix,
                )
            ]
        return [
            _f(
                Status.SKIP,
                f"{why}; the container checks are skipped (on a DGX Spark this is a FAIL)",
                subject,
            )
        ]
    evidence = (
        who,
        f"{sock['path']}: group {sock.get('group')}, mode {sock.get('mode')}",
        checks.docker_group_source,
    )
    if sock.get("access") or user.get("uid") == 0:
        how = "root" if user.get("uid") == 0 else f"member of {sock.get('group')}"
        return [
            _f(Status.PASS, f"this user may use the Docker socket {sock['path']} ({how})", subject, evidence)
        ]
    if sock.get("listed_in_group"):
        return [
            _f(
                Status.FAIL,
                f"{user.get('name')} is in the {sock.get('group')} group, but this session started before: "
                f"no permission on {sock['path']}",
                subject,
                evidence,
                "log out and back in (or run: newgrp docker)",
            )
        ]
    return [
        _f(
            Status.FAIL,
            f"{user.get('name')} may not use the Docker socket {sock['path']} (not root, not in its group "
            f"{sock.get('group')}): every docker command fails with 'permission denied'",
            subject,
            evidence,
            checks.docker_group_fix,
        )
    ]


def docker_engine(f: HostFacts) -> list[Finding]:
    """The engine answers /_ping and /info within the timeout."""
    subject = "docker:engine"
    if (skip := _not_read(f, subject)) is not None:
        return skip
    engine, sock = f.engine, f.socket
    if engine.get("answered"):
        evidence = tuple(
            x
            for x in (
                f"runtimes: {', '.join(engine.get('runtimes') or [])}",
                f"root folder: {engine.get('root_dir')}",
                f"architecture: {engine.get('architecture')}",
            )
        )
        return [_f(Status.PASS, f"Docker {engine.get('version')} answers", subject, evidence)]
    if f.docker_absent or engine.get("denied") or (sock.get("exists") and sock.get("access") is False):
        return [_f(Status.SKIP, "cannot ask the engine (see docker:socket)", subject)]
    return [
        _f(
            Status.FAIL,
            f"the Docker engine does not answer: {engine.get('error') or 'no answer recorded'}",
            subject,
            fix=hosts().checks.docker_start_fix,
        )
    ]


def _gpu_specs(f: HostFacts) -> tuple[list[str], list[str]]:
    """(specs of kind nvidia.com/gpu that name at least one device, those that name none)."""
    named, empty = [], []
    for spec in (f.part("cdi") or {}).get("specs") or []:
        if str(spec.get("kind")) != "nvidia.com/gpu":
            continue
        devices = [d for d in spec.get("devices") or [] if d != "all"]
        (named if devices else empty).append(f"{spec.get('path')} ({', '.join(devices) or 'no device'})")
    return named, empty


def nvidia_runtime(f: HostFacts) -> list[Finding]:
    """The engine knows the NVIDIA runtime (`docker info` Runtimes), or a CDI spec names the GPU."""
    subject = "docker:nvidia-runtime"
    if (skip := _not_read(f, subject) or _no_engine(f, subject)) is not None:
        return skip
    checks = hosts().checks
    runtimes = f.engine.get("runtimes") or []
    named, empty = _gpu_specs(f)
    evidence = (f"runtimes: {', '.join(runtimes) or 'none'}", *(f"CDI spec {s}" for s in named + empty))
    if not f.driver_version and not f.is_spark:
        return [
            _f(
                Status.SKIP,
                f"no NVIDIA driver here ({f.driver_missing_why}): no GPU to give a container",
                subject,
                evidence,
            )
        ]
    if "nvidia" in runtimes or named:
        how = "the nvidia runtime" if "nvidia" in runtimes else "a CDI spec naming the GPU"
        return [_f(Status.PASS, f"containers can get the GPU through {how}", subject, evidence)]
    if empty:
        return [
            _f(
                Status.FAIL,
                "the CDI spec for nvidia.com/gpu names no GPU (generated before the driver was loaded?)",
                subject,
                (*evidence, checks.cdi_source),
                checks.cdi_fix,
            )
        ]
    return [
        _f(
            Status.FAIL,
            "Docker has no NVIDIA runtime and no CDI spec names the GPU: `docker run --gpus all` fails "
            "('could not select device driver') and containers see no GPU",
            subject,
            (*evidence, checks.toolkit_source),
            f"{checks.runtime_fix} (or, for CDI: {checks.cdi_fix})",
        )
    ]


def _runtime_missing(f: HostFacts) -> bool:
    """Whether nvidia_runtime says FAIL for a missing runtime (the one line for that problem)."""
    named, empty = _gpu_specs(f)
    has_gpu = bool(f.driver_version) or f.is_spark
    return has_gpu and "nvidia" not in (f.engine.get("runtimes") or []) and not named and not empty


def gpu_container(f: HostFacts) -> list[Finding]:
    """With --image: one container of it, asked for every GPU, lists them (nvidia-smi -L)."""
    subject = "docker:gpu-container"
    if (skip := _not_read(f, subject)) is not None:
        return skip
    ran = f.part("container")
    if ran is None:
        return [
            _f(
                Status.SKIP,
                "no --image given: `sparkenv host --image IMAGE` runs one container to see its GPU",
                subject,
            )
        ]
    if (skip := _no_engine(f, subject)) is not None:
        return skip
    checks = hosts().checks
    image = ran.get("image")
    output = [str(x) for x in ran.get("output") or []]
    error = str(ran.get("error") or "")
    evidence = tuple(output[-5:]) + ((error,) if error else ())
    gpus = [ln for ln in output if ln.startswith("GPU ")]
    said = " ".join([error, *output])
    if "exec format error" in said:
        return [
            _f(
                Status.FAIL,
                f"{image} is built for another CPU ('exec format error'): a Spark runs arm64 images",
                subject,
                evidence,
                f"use the image's arm64 build (docker image inspect {image} "
                "--format '{{.Architecture}}')",
            )
        ]
    if "could not select device driver" in said or "unknown or invalid runtime" in said:
        if _runtime_missing(f):
            return [
                _f(
                    Status.SKIP,
                    f"a container of {image} cannot be given the GPU (see docker:nvidia-runtime)",
                    subject,
                    evidence,
                )
            ]
        return [
            _f(
                Status.FAIL,
                f"a container of {image} cannot be given the GPU: the engine has no NVIDIA runtime",
                subject,
                (*evidence, checks.toolkit_source),
                checks.runtime_fix,
            )
        ]
    if ran.get("timed_out"):
        return [_f(Status.ERROR, f"the test container of {image} did not finish: {error}", subject, evidence)]
    if error and ran.get("exit_code") is None:
        fix = f"docker pull {image}" if "not on this machine" in error else None
        return [
            _f(Status.ERROR, f"the test container of {image} could not run: {error}", subject, evidence, fix)
        ]
    if ran.get("exit_code") == 0 and gpus:
        return [
            _f(Status.PASS, f"a container of {image} sees {len(gpus)} GPU(s): {gpus[0]}", subject, evidence)
        ]
    return [
        _f(
            Status.FAIL,
            f"a container of {image} sees no GPU (nvidia-smi -L exit {ran.get('exit_code')})",
            subject,
            evidence,
            checks.runtime_fix,
        )
    ]


def image_disk(f: HostFacts) -> list[Finding]:
    """Free space where the engine unpacks images."""
    subject = "docker:disk"
    if (skip := _not_read(f, subject) or _no_engine(f, subject)) is not None:
        return skip
    disk = f.part("disk") or {}
    if "free_bytes" not in disk:
        return [
            _f(Status.ERROR, f"free space not read: {disk.get('error') or f.probe_error('disk')}", subject)
        ]
    need = hosts().checks.image_free_gib
    free = disk["free_bytes"] / GIB
    evidence = (f"{disk.get('path')}: {free:.1f} GiB free of {disk.get('total_bytes', 0) / GIB:.1f} GiB",)
    if free < need:
        return [
            _f(
                Status.WARN,
                f"{free:.1f} GiB free for images at {disk.get('path')}: an NGC image needs about "
                f"{need:g} GiB",
                subject,
                evidence,
                "docker system prune (removes stopped containers and unused images), or free space there",
            )
        ]
    return [_f(Status.PASS, f"{free:.1f} GiB free for images at {disk.get('path')}", subject, evidence)]


def where(f: HostFacts) -> list[Finding]:
    """An INFO where container markers are seen: inside a container, what is read is the container's
    (its socket, its user, its groups), not the Spark's. Markers alone (a VM can carry /.dockerenv)."""
    markers = (f.section("container") or {}).get("markers") or []
    if not markers:
        return []
    return [
        _f(
            Status.INFO,
            "container markers seen: if this runs inside a container, the Docker and driver lines describe "
            "the container, not the Spark",
            "host:where",
            tuple(markers),
            "run sparkenv host on the Spark itself, as the user who starts containers",
        )
    ]


def g9(f: HostFacts) -> list[Finding]:
    """G9's one host rule: each Docker check above, one finding per subject (one line in all for a
    snapshot that holds none of it)."""
    if not f.has_setup:
        return _not_read(f, "docker") or []
    return (
        where(f) + docker_access(f) + docker_engine(f) + nvidia_runtime(f) + gpu_container(f) + image_disk(f)
    )

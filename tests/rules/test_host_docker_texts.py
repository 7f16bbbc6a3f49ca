"""rules/host_docker.py (G9 at `sparkenv host`): each Docker check's finding in full — status, subject,
summary, the evidence lines and the fix — since the user acts on those words: which socket, which group,
which image, what the engine said, what to run. test_g_host.py holds the rows (status and a part of the
text per case); here the cases at the edges those rows leave: Docker reached over TCP, a user the
snapshot does not name, an engine that refuses without saying why, a test container that timed out or
never started, a Hopper host (a driver, not a Spark) without the NVIDIA runtime. The snapshots are
tests/fixtures/host/, changed where a case says; fixes and sources come from data/hosts.toml [checks]."""

from __future__ import annotations

from test_g_host import EMPTY_SPEC, NO_DOCKER, OFF_SPARK, _load, snap

from sparkenv.core.report import Finding, GotchaId, Status
from sparkenv.knowledge import hosts
from sparkenv.rules import host_docker

CHECKS = hosts().checks
G9 = GotchaId.G9
IMAGE = "nvcr.io/nvidia/pytorch:25.11-py3"
HEALTHY_RUNTIMES = "runtimes: io.containerd.runc.v2, nvidia, runc"
HEALTHY_CDI = "CDI spec /var/run/cdi/nvidia.yaml (0, GPU-0f059bf0-a212-94c1-44a7-1068a6c6be66)"
NOT_ANSWERED = {"answered": False, "error": "no answer within the timeout"}


def one(findings: list[Finding]) -> Finding:
    assert len(findings) == 1, findings
    (f,) = findings
    assert f.id is G9, f
    return f


def test_the_socket_of_a_member_of_the_docker_group():
    f = one(host_docker.docker_access(snap()))
    assert (f.status, f.subject) == (Status.PASS, "docker:socket")
    assert f.summary == "this user may use the Docker socket /var/run/docker.sock (member of docker)"
    assert f.evidence == (
        "user spark (groups: spark, adm, sudo, docker)",
        "/var/run/docker.sock: group docker, mode 0o660",
        CHECKS.docker_group_source,
    )
    assert f.fix is None


def test_root_may_use_the_socket_without_its_group():
    f = one(host_docker.docker_access(snap(
        "gb10-user-not-in-docker-group", host_setup__user={"name": "root", "uid": 0, "groups": []}
    )))  # fmt: skip
    assert f.status is Status.PASS
    assert f.summary == "this user may use the Docker socket /var/run/docker.sock (root)"
    assert f.evidence[0] == "user root (groups: none)"


def test_a_user_the_snapshot_does_not_name():
    f = one(host_docker.docker_access(snap("gb10-user-not-in-docker-group", host_setup__user={"uid": 1000})))
    assert f.status is Status.FAIL
    assert f.evidence[0] == "user ? (groups: none)"
    assert f.fix == CHECKS.docker_group_fix


def test_in_the_group_but_the_session_started_before():
    f = one(host_docker.docker_access(
        snap("gb10-user-not-in-docker-group", host_setup__socket__listed_in_group=True)
    ))  # fmt: skip
    assert (f.status, f.subject) == (Status.FAIL, "docker:socket")
    assert f.summary == (
        "spark is in the docker group, but this session started before: no permission on /var/run/docker.sock"
    )
    assert f.fix == "log out and back in (or run: newgrp docker)"


def test_not_in_the_group():
    f = one(host_docker.docker_access(snap("gb10-user-not-in-docker-group")))
    assert f.summary == (
        "spark may not use the Docker socket /var/run/docker.sock (not root, not in its group docker): "
        "every docker command fails with 'permission denied'"
    )
    assert f.evidence == (
        "user spark (groups: spark, adm, sudo)",
        "/var/run/docker.sock: group docker, mode 0o660",
        CHECKS.docker_group_source,
    )


def test_docker_reached_over_tcp_is_said_not_checked():
    f = one(host_docker.docker_access(snap(host_setup__socket={"host": "tcp://10.0.0.2:2376", "path": None})))
    assert (f.status, f.subject) == (Status.INFO, "docker:socket")
    assert f.summary == "Docker is reached at tcp://10.0.0.2:2376: the socket is not checked"
    assert (f.evidence, f.fix) == ((), None)


def test_no_docker_on_a_spark_and_off_it():
    on = one(host_docker.docker_access(snap(**NO_DOCKER)))
    assert on.summary == (
        "no Docker engine on this machine (no socket at /var/run/docker.sock): on a Spark, containers are "
        "how the CUDA 13 stack runs (NGC images)"
    )
    assert on.fix == CHECKS.docker_start_fix
    off = one(host_docker.docker_access(snap(**NO_DOCKER, **OFF_SPARK)))
    assert (off.status, off.subject, off.fix) == (Status.SKIP, "docker:socket", None)
    assert off.summary == (
        "no Docker engine on this machine (no socket at /var/run/docker.sock); the container checks are "
        "skipped (on a DGX Spark this is a FAIL)"
    )


def test_the_engine_answers_with_what_it_runs():
    f = one(host_docker.docker_engine(snap()))
    assert (f.status, f.subject, f.summary) == (Status.PASS, "docker:engine", "Docker 28.3.3 answers")
    assert f.evidence == (HEALTHY_RUNTIMES, "root folder: /var/lib/docker", "architecture: aarch64")


def test_an_engine_that_does_not_answer_says_what_it_said():
    f = one(host_docker.docker_engine(snap(host_setup__docker=NOT_ANSWERED)))
    assert (f.status, f.subject) == (Status.FAIL, "docker:engine")
    assert f.summary == "the Docker engine does not answer: no answer within the timeout"
    assert f.fix == CHECKS.docker_start_fix
    silent = one(host_docker.docker_engine(snap(host_setup__docker={"answered": False})))
    assert silent.summary == "the Docker engine does not answer: no answer recorded"


def test_a_socket_this_user_may_not_use_leaves_the_engine_unasked():
    """No answer and no word of a denial from the engine, but the socket's mode shuts this user out: the
    socket's line says why, the engine's is a SKIP, not a second FAIL."""
    f = one(host_docker.docker_engine(snap(
        "gb10-user-not-in-docker-group", host_setup__docker={"answered": False, "error": "EOF"}
    )))  # fmt: skip
    assert (f.status, f.subject, f.summary) == (
        Status.SKIP, "docker:engine", "cannot ask the engine (see docker:socket)"
    )  # fmt: skip


def test_a_check_that_needs_the_engine_skips_without_it():
    for check, subject in (
        (host_docker.nvidia_runtime, "docker:nvidia-runtime"),
        (host_docker.image_disk, "docker:disk"),
    ):
        f = one(check(snap(host_setup__docker=NOT_ANSWERED)))
        assert (f.status, f.subject) == (Status.SKIP, subject)
        assert f.summary == "needs a Docker engine that answers this user (see docker:socket, docker:engine)"


def test_a_gate_snapshot_skips_each_check_under_its_own_subject():
    f = snap(host_setup=None)
    for check, subject in (
        (host_docker.docker_access, "docker:socket"),
        (host_docker.docker_engine, "docker:engine"),
        (host_docker.nvidia_runtime, "docker:nvidia-runtime"),
        (host_docker.gpu_container, "docker:gpu-container"),
        (host_docker.image_disk, "docker:disk"),
    ):
        got = one(check(f))
        assert (got.status, got.subject) == (Status.SKIP, subject)
        assert got.summary == "not in this snapshot (taken by the gate, not by sparkenv host)"


def test_the_runtime_and_the_cdi_spec_as_evidence():
    f = one(host_docker.nvidia_runtime(snap()))
    assert (f.status, f.summary) == (Status.PASS, "containers can get the GPU through the nvidia runtime")
    assert f.evidence == (HEALTHY_RUNTIMES, HEALTHY_CDI)
    cdi = one(host_docker.nvidia_runtime(snap(host_setup__docker__runtimes=["runc"])))
    assert cdi.summary == "containers can get the GPU through a CDI spec naming the GPU"
    assert cdi.evidence == ("runtimes: runc", HEALTHY_CDI)


def test_neither_runtime_nor_cdi():
    f = one(host_docker.nvidia_runtime(snap("gb10-no-nvidia-runtime")))
    assert (f.status, f.subject) == (Status.FAIL, "docker:nvidia-runtime")
    assert f.summary == (
        "Docker has no NVIDIA runtime and no CDI spec names the GPU: `docker run --gpus all` fails "
        "('could not select device driver') and containers see no GPU"
    )
    assert f.evidence == ("runtimes: io.containerd.runc.v2, runc", CHECKS.toolkit_source)
    assert f.fix == f"{CHECKS.runtime_fix} (or, for CDI: {CHECKS.cdi_fix})"


def test_a_cdi_spec_that_names_no_gpu():
    f = one(
        host_docker.nvidia_runtime(
            snap(host_setup__docker__runtimes=["runc"], host_setup__cdi={"specs": [EMPTY_SPEC]})
        )
    )
    assert f.status is Status.FAIL
    assert f.evidence == ("runtimes: runc", "CDI spec /etc/cdi/nvidia.yaml (no device)", CHECKS.cdi_source)
    assert f.fix == CHECKS.cdi_fix


def _ran(**container) -> dict:
    return {"host_setup__container": {"image": IMAGE, **container}}


def test_a_container_that_sees_no_gpu():
    f = one(host_docker.gpu_container(snap(**_ran(exit_code=9, output=["No devices were found"]))))
    assert (f.status, f.subject) == (Status.FAIL, "docker:gpu-container")
    assert f.summary == f"a container of {IMAGE} sees no GPU (nvidia-smi -L exit 9)"
    assert f.evidence == ("No devices were found",)
    assert f.fix == CHECKS.runtime_fix


def test_a_container_that_timed_out():
    f = one(host_docker.gpu_container(snap(**_ran(timed_out=True, error="no end within 120 s", output=[]))))
    assert (f.status, f.subject) == (Status.ERROR, "docker:gpu-container")
    assert f.summary == f"the test container of {IMAGE} did not finish: no end within 120 s"
    assert f.evidence == ("no end within 120 s",)


def test_a_container_that_could_not_start():
    absent = one(host_docker.gpu_container(snap(**_ran(error="the image is not on this machine"))))
    assert (absent.status, absent.subject) == (Status.ERROR, "docker:gpu-container")
    assert absent.summary == f"the test container of {IMAGE} could not run: the image is not on this machine"
    assert absent.fix == f"docker pull {IMAGE}"
    other = one(host_docker.gpu_container(snap(**_ran(error="no space left on device"))))
    assert other.status is Status.ERROR and other.fix is None


def test_a_container_that_ran_and_said_something_on_stderr_is_judged_by_its_output():
    """An error text beside an exit code is the container's own stderr: it ran, so its GPU list counts."""
    gb10 = "GPU 0: NVIDIA GB10 (UUID: GPU-0f059bf0-a212-94c1-44a7-1068a6c6be66)"
    f = one(host_docker.gpu_container(snap(**_ran(exit_code=0, output=[gb10], error="a warning"))))
    assert (f.status, f.summary) == (Status.PASS, f"a container of {IMAGE} sees 1 GPU(s): {gb10}")
    assert f.evidence == (gb10, "a warning")


def test_no_runtime_on_a_hopper_host_is_said_once():
    """A host with a driver that is not a Spark, without the NVIDIA runtime: the runtime line FAILs, so
    the test container's 'could not select device driver' is a SKIP pointing there, not a second FAIL."""
    hopper = {**OFF_SPARK, "driver": _load("gb10-proprietary-module")["driver"]}
    f = snap("gb10-no-nvidia-runtime", **hopper)
    assert one(host_docker.nvidia_runtime(f)).status is Status.FAIL
    got = one(host_docker.gpu_container(f))
    assert got.status is Status.SKIP
    assert got.summary == (
        "a container of pytorch/pytorch:2.9.0-cuda13.0-cudnn9-runtime cannot be given the GPU "
        "(see docker:nvidia-runtime)"
    )


def test_free_space_for_images():
    f = one(host_docker.image_disk(snap()))
    assert (f.status, f.subject) == (Status.PASS, "docker:disk")
    assert f.summary == "3200.0 GiB free for images at /var/lib/docker"
    assert f.evidence == ("/var/lib/docker: 3200.0 GiB free of 3700.0 GiB",)
    low = one(host_docker.image_disk(snap(host_setup__disk__free_bytes=5 << 30)))
    assert low.summary == (
        f"5.0 GiB free for images at /var/lib/docker: an NGC image needs about {CHECKS.image_free_gib:g} GiB"
    )
    assert (
        low.fix == "docker system prune (removes stopped containers and unused images), or free space there"
    )


def test_free_space_not_read():
    f = one(host_docker.image_disk(snap(host_setup__disk={"error": "statvfs: permission denied"})))
    assert (f.status, f.subject) == (Status.ERROR, "docker:disk")
    assert f.summary == "free space not read: statvfs: permission denied"


def test_container_markers():
    (f,) = host_docker.where(snap(container={"markers": ["/.dockerenv exists"]}))
    assert (f.status, f.subject, f.evidence) == (Status.INFO, "host:where", ("/.dockerenv exists",))
    assert f.fix == "run sparkenv host on the Spark itself, as the user who starts containers"

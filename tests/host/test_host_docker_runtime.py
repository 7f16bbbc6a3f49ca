"""A Docker engine without the NVIDIA runtime, for real (this machine's has none): `sparkenv host
--image` asks it for one container with every GPU requested, as `docker run --gpus all` does; the
engine refuses, the report says why and prints the nvidia-ctk fix, and no container is left behind."""

from __future__ import annotations

import io
import shutil
import subprocess
import tarfile
import uuid

import pytest
from host_helpers import engine_or_skip, finding, skip_unless_required

pytestmark = pytest.mark.docker

PROGRAM = "int main(void) { return 0; }\n"


@pytest.fixture
def tiny_image(tmp_path):  # type: ignore[no-untyped-def]
    """A one-file image: a static program compiled here, imported with `docker import`."""
    if not shutil.which("docker") or not shutil.which("gcc"):
        skip_unless_required("needs the docker CLI and gcc to make a local image")
    (tmp_path / "true.c").write_text(PROGRAM)
    binary = tmp_path / "true"
    built = subprocess.run(
        ["gcc", "-static", "-O2", "-o", str(binary), str(tmp_path / "true.c")],
        capture_output=True,
        text=True,
        timeout=120,
    )
    if built.returncode != 0:
        skip_unless_required(f"gcc cannot link statically here: {built.stderr.strip()[:200]}")
    buf = io.BytesIO()
    with tarfile.open(fileobj=buf, mode="w") as tar:
        tar.add(binary, arcname="bin/true")
    tag = f"sparkenv-host-test:{uuid.uuid4().hex[:8]}"
    subprocess.run(
        ["docker", "import", "-", tag], input=buf.getvalue(), check=True, capture_output=True, timeout=120
    )
    try:
        yield tag
    finally:
        subprocess.run(["docker", "rmi", "-f", tag], capture_output=True, timeout=120)


def _containers_of(tag: str) -> list[str]:
    out = subprocess.run(
        ["docker", "ps", "-a", "-q", "--filter", f"ancestor={tag}"],
        capture_output=True,
        text=True,
        timeout=60,
        check=True,
    )
    return out.stdout.split()


def test_an_engine_without_the_nvidia_runtime_cannot_give_the_gpu(run, tiny_image):  # type: ignore[no-untyped-def]
    info = engine_or_skip()
    if "nvidia" in info["runtimes"]:
        pytest.skip("this engine has the NVIDIA runtime")
    r = run("host", "--json", "--image", tiny_image, "--timeout", "60")
    report = r.json()
    container = finding(report, "docker:gpu-container")
    runtime = finding(report, "docker:nvidia-runtime")
    # one FAIL line for the one problem, carrying the fix: the runtime line where a GPU is there to give,
    # the container line where (as on a machine without a driver) the runtime line has nothing to judge
    failing = [f for f in (container, runtime) if f["status"] == "FAIL"]
    assert r.code == 1 and len(failing) == 1, (container, runtime)
    assert "nvidia-ctk runtime configure --runtime=docker" in failing[0]["fix"]
    if container["status"] == "FAIL":
        assert "could not select device driver" in " ".join(container["evidence"]), container
    assert _containers_of(tiny_image) == []  # removed after


def test_an_image_that_is_not_here_is_said_not_pulled(run):  # type: ignore[no-untyped-def]
    engine_or_skip()
    missing = f"sparkenv-host-absent:{uuid.uuid4().hex[:8]}"
    report = run("host", "--json", "--image", missing).json()
    container = finding(report, "docker:gpu-container")
    assert container["status"] == "ERROR" and container["fix"] == f"docker pull {missing}", container

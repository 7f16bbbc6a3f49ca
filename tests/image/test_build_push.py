"""`sparkenv build --push` to a real registry on loopback (Debian's docker-registry, started by .ci/run),
then the second "node": the image is removed here, pulled back by the printed digest, and its gate runs
from that digest with the digest as $SPARKENV_IMAGE (what the cross-node agreement compares)."""

from __future__ import annotations

import os
import re
import subprocess
import sys
import urllib.request
import uuid
from collections.abc import Iterator
from pathlib import Path

import artifacts
import build_helpers as bh
import pytest

pytestmark = pytest.mark.docker
REPO = Path(__file__).resolve().parents[2]
REGISTRY = os.environ.get("SPARKENV_TEST_REGISTRY", "127.0.0.1:5000")


def registry_or_skip() -> str:
    try:
        urllib.request.urlopen(f"http://{REGISTRY}/v2/", timeout=3)
        return REGISTRY
    except OSError as exc:
        reason = f"no registry answers at {REGISTRY} ({exc})"
        if os.environ.get("SPARKENV_REQUIRE_DOCKER") == "1":
            pytest.fail(reason + "; .ci/run starts Debian's docker-registry there")
        pytest.skip(reason)


@pytest.fixture(scope="module")
def engine():  # type: ignore[no-untyped-def]
    client = bh.engine_or_skip()
    bh.ensure_standin(client)
    return client


@pytest.fixture(scope="module")
def wheel(tmp_path_factory: pytest.TempPathFactory) -> Path:
    d = tmp_path_factory.mktemp("wheels")
    return artifacts.write_wheel(
        d, "tinypkg", "1.0", {"tinypkg/__init__.py": "GREETING = 'hello from tinypkg'\n"}
    )


@pytest.fixture(scope="module")
def index(wheel: Path) -> Iterator[str]:
    with artifacts.serve_index([wheel]) as url:
        yield url


def build(lock: Path, *extra: str) -> subprocess.CompletedProcess[str]:
    argv = [sys.executable, "-m", "sparkenv", "build", "--lock", str(lock), "--profile"]
    argv += [str(lock.parent / "standin.toml"), "--base", bh.STANDIN_TAG, "--platform", "linux/amd64"]
    argv += ["--network", "host", *extra]
    env = {**os.environ, "PIP_CERT": "", "SSL_CERT_FILE": ""}
    return subprocess.run(argv, capture_output=True, text=True, timeout=600, cwd=REPO, env=env)


def test_push_pull_by_digest_and_gate_on_the_second_node(engine, wheel, index, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    registry = registry_or_skip()
    lock = bh.write_lock(tmp_path, index, {"1-packages": [wheel]}, bh.STANDIN_TAG)
    name = f"{registry}/sparkenv-test/train"
    ref = f"{name}:{uuid.uuid4().hex[:8]}"
    done = build(lock, "--push", ref, "-q")
    assert done.returncode == 0, done.stderr[-3000:] + done.stdout
    pinned = done.stdout.strip().splitlines()[-1]
    assert re.fullmatch(re.escape(name) + r"@sha256:[0-9a-f]{64}", pinned), done.stdout
    assert f"docker pull {pinned}" in done.stdout
    digest = pinned.split("@", 1)[1]
    # The registry serves that manifest under the tag: the digest printed is the registry's own.
    repo_path, tag = ref.split("/", 1)[1].rsplit(":", 1)
    req = urllib.request.Request(
        f"http://{registry}/v2/{repo_path}/manifests/{tag}",
        headers={"Accept": "application/vnd.docker.distribution.manifest.v2+json"},
        method="HEAD",
    )
    with urllib.request.urlopen(req, timeout=10) as resp:
        assert resp.headers["Docker-Content-Digest"] == digest

    # The second node: nothing of the image here, pulled by digest, gated from that digest.
    image_id = engine.images.get(ref).id
    engine.images.remove(ref, force=True)
    with_same_id = [t for i in engine.images.list() if i.id == image_id for t in i.tags]
    for t in with_same_id:
        engine.images.remove(t, force=True)
    pulled = subprocess.run(["docker", "pull", pinned], capture_output=True, text=True, timeout=300)
    assert pulled.returncode == 0, pulled.stderr
    assert engine.images.get(pinned).id == image_id  # the very image that audited itself
    run = subprocess.run(
        [
            "docker",
            "run",
            "--rm",
            "-e",
            f"SPARKENV_IMAGE={pinned}",
            "-e",
            "SPARKENV_GATE=warn",
            pinned,
            "python3",
            "-c",
            "import os; print('workload sees', os.environ['SPARKENV_IMAGE'])",
        ],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert run.returncode == 0, run.stderr
    assert f"workload sees {pinned}" in run.stdout
    assert any(ln.startswith("G10 ") for ln in run.stderr.splitlines()), run.stderr
    for t in with_same_id:  # put back what other tests of this engine tagged
        engine.images.get(pinned).tag(*t.rsplit(":", 1))


def test_push_to_a_registry_that_is_not_there_is_exit_3(engine, wheel, index, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    lock = bh.write_lock(tmp_path, index, {"1-packages": [wheel]}, bh.STANDIN_TAG)
    done = build(lock, "--push", "127.0.0.1:9/sparkenv-test/nowhere:1", "-q")
    assert done.returncode == 3, done.stderr + done.stdout
    err = done.stderr.strip().splitlines()
    assert len(err) == 1 and "cannot reach the registry 127.0.0.1:9" in err[0], done.stderr


def _closed_port() -> int:
    """A loopback port nothing listens on: bound, read and closed again (the kernel does not hand it out
    again at once)."""
    import socket

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def test_a_failed_push_leaves_no_registry_tag_and_keeps_the_last_audit_report(
    engine, wheel, index, tmp_path: Path
) -> None:  # type: ignore[no-untyped-def]
    """A push the registry address refuses: exit 3, the local tag for the registry name is removed (a
    `docker push` of it later would publish an image no manifest vouched for), and the previous
    image-audit.<profile>.json is not replaced by one describing an image that was never published."""
    from docker.errors import ImageNotFound

    lock = bh.write_lock(tmp_path, index, {"1-packages": [wheel]}, bh.STANDIN_TAG)
    previous = '{"kept": "the report of the last build that finished"}\n'
    report = lock.with_name(f"image-audit.{lock.name.split('.')[1]}.json")
    report.write_text(previous)
    ref = f"127.0.0.1:{_closed_port()}/sparkenv-test/refused:{uuid.uuid4().hex[:8]}"
    done = build(lock, "--push", ref, "-q")
    assert done.returncode == 3, done.stderr[-3000:] + done.stdout
    assert "cannot reach the registry 127.0.0.1:" in done.stderr, done.stderr
    with pytest.raises(ImageNotFound):
        engine.images.get(ref)
    assert report.read_text() == previous
    assert [p.name for p in tmp_path.glob("image-audit.*.json")] == [report.name]


def test_push_name_is_checked_before_anything_is_built(tmp_path: Path) -> None:
    done = subprocess.run(
        [sys.executable, "-m", "sparkenv", "build", "--push", "127.0.0.1:5000/Bad Name:1", "--dry-run"],
        capture_output=True,
        text=True,
        timeout=60,
        cwd=REPO,
    )
    assert done.returncode == 2 and "--push '127.0.0.1:5000/Bad Name:1': not a valid" in done.stderr

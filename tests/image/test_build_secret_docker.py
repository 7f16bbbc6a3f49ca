"""No credential at rest after `sparkenv build`: the index's credential, given only where uv reads it
(UV_EXTRA_INDEX_URL=http://user:token@…: UV_INDEX_URL would also be where sparkenv's own runtime wheels
are resolved from, which this index does not hold), must reach the fetch stage as a BuildKit secret
mount, so that nothing the engine keeps holds it — not the final image, not an intermediate image of any
stage, not the build cache — and no process's command line carries it. The index is private (HTTP basic
auth) on 127.0.0.1.

Before: the fetch stage COPYed a netrc; the classic builder kept that step as an intermediate image in its
cache, and `docker run --entrypoint cat <that image> /tmp/sparkenv-netrc` printed the password."""

from __future__ import annotations

import os
import secrets
import subprocess
import sys
import threading
from pathlib import Path

import artifacts
import build_helpers as bh
import pytest

pytestmark = pytest.mark.docker


def _images() -> set[str]:
    done = subprocess.run(
        ["docker", "images", "-a", "-q", "--no-trunc"], capture_output=True, text=True, timeout=60, check=True
    )
    return set(done.stdout.split())


def _engine_root(client) -> Path | None:  # type: ignore[no-untyped-def]
    """The engine's data root, where it is on this machine and readable: every layer, every intermediate
    image and BuildKit's cache lie under it."""
    host = os.environ.get("DOCKER_HOST", "unix://")
    root = Path(client.info().get("DockerRootDir", "/var/lib/docker"))
    return root if host.startswith("unix://") and os.access(root, os.R_OK | os.X_OK) else None


def _holding(root: Path, needle: str) -> list[str]:
    done = subprocess.run(
        ["grep", "-rlsF", "--", needle, str(root)], capture_output=True, text=True, timeout=600
    )
    assert done.returncode in (0, 1), done.stderr[-500:]
    return done.stdout.split()


class _CommandLines(threading.Thread):
    """Every process's command line, sampled while the build runs: none may carry the credential."""

    def __init__(self, needle: bytes) -> None:
        super().__init__(daemon=True)
        self.needle, self.stop, self.seen = needle, threading.Event(), []  # type: ignore[var-annotated]

    def run(self) -> None:
        while not self.stop.wait(0.1):
            for entry in Path("/proc").iterdir():
                try:
                    line = (entry / "cmdline").read_bytes()
                except OSError:
                    continue
                if self.needle in line:
                    self.seen.append(line.replace(b"\0", b" ").decode(errors="replace"))


def test_a_credential_from_uv_s_variables_is_nowhere_the_engine_keeps(tmp_path: Path) -> None:
    client = bh.engine_or_skip()
    bh.ensure_standin(client)
    root = _engine_root(client)
    if root is None:
        bh.skip_unless_required("the engine's data root is not readable here (a remote engine or not root)")
    user, token = "alice", "tok" + secrets.token_hex(12)  # fresh: an older run's leftovers cannot match
    wheel = artifacts.write_wheel(tmp_path, "tinypkg", "1.0", {"tinypkg/__init__.py": "GREETING = 'hi'\n"})
    ix = artifacts.Index(tmp_path / "index", pep658=False)
    ix.add(wheel)
    server = artifacts.serve(ix, auth=f"{user}:{token}")
    tag = f"sparkenv-test/secret:{token[-6:]}"
    temp = tmp_path / "tmp"
    temp.mkdir()
    watcher = _CommandLines(token.encode())
    before = _images()
    try:
        lock = bh.write_lock(tmp_path, ix.url, {"1-packages": [wheel]}, bh.STANDIN_TAG)
        assert token not in lock.read_text()  # the credential is only in the environment, as uv reads it
        cmd = [sys.executable, "-m", "sparkenv", "build", "--lock", str(lock)]
        cmd += ["--profile", str(tmp_path / "standin.toml"), "--base", bh.STANDIN_TAG]
        cmd += ["--platform", "linux/amd64", "--network", "host", "--tag", tag, "--no-cache"]
        env = {
            **os.environ,
            "UV_EXTRA_INDEX_URL": ix.url.replace("http://", f"http://{user}:{token}@"),
            "PIP_CERT": "",
            "SSL_CERT_FILE": "",
            "TMPDIR": str(temp),
        }
        watcher.start()
        r = subprocess.run(cmd, capture_output=True, text=True, timeout=900, cwd=tmp_path, env=env)
        watcher.stop.set()
        watcher.join()
        assert r.returncode == 0, r.stdout[-3000:] + r.stderr[-3000:]
        assert token not in r.stdout + r.stderr
        assert watcher.seen == []
        # the credential was used: the private index answers 401 without it
        assert any(path.startswith("/simple/tinypkg") for path, _ in server.requests)  # type: ignore[attr-defined]
        assert list(temp.iterdir()) == []  # the secret's file went with the build
        made = _images() - before
        assert client.images.get(tag).id in made
        for image_id in made:  # the final image and every intermediate one the build left
            image = client.images.get(image_id)
            assert token not in repr(image.attrs) and token not in repr(image.history()), image_id
        assert bh.layers_holding(client, tag, token.encode()) == []
        # every layer, intermediate image and build-cache record of the engine, byte for byte
        assert _holding(root, token) == []
    finally:
        watcher.stop.set()
        server.shutdown()
        subprocess.run(["docker", "rmi", "-f", tag], capture_output=True, timeout=60)


def test_a_failed_step_of_a_buildkit_build_is_said_as_the_classic_ones(tmp_path: Path) -> None:
    """BuildKit's log (--progress=plain) read back: a download whose bytes do not match the lock's hash
    fails the build with exit 1, one error naming the step and quoting pip's lines (no colour codes), and
    the credential nowhere in it."""
    client = bh.engine_or_skip()
    bh.ensure_standin(client)
    user, token = "alice", "tok" + secrets.token_hex(12)
    wheel = artifacts.write_wheel(tmp_path, "tinypkg", "1.0", {"tinypkg/__init__.py": "X = 1\n"})
    ix = artifacts.Index(tmp_path / "index", pep658=False)
    ix.add(wheel)
    server = artifacts.serve(ix, auth=f"{user}:{token}")
    try:
        lock = bh.write_lock(tmp_path, ix.url, {"1-packages": [wheel]}, bh.STANDIN_TAG)
        (tmp_path / "other").mkdir()
        other = artifacts.write_wheel(
            tmp_path / "other", "tinypkg", "1.0", {"tinypkg/__init__.py": "X = 2\n"}
        )
        (ix.root / "files" / wheel.name).write_bytes(other.read_bytes())  # the index now serves other bytes
        cmd = [sys.executable, "-m", "sparkenv", "build", "--lock", str(lock)]
        cmd += ["--profile", str(tmp_path / "standin.toml"), "--base", bh.STANDIN_TAG]
        cmd += ["--platform", "linux/amd64", "--network", "host", "--tag", "sparkenv-test/secret-fails:1"]
        env = {**os.environ, "UV_EXTRA_INDEX_URL": ix.url.replace("http://", f"http://{user}:{token}@")}
        r = subprocess.run(cmd, capture_output=True, text=True, timeout=900, cwd=tmp_path, env=env)
        assert r.returncode == 1, r.stdout[-3000:] + r.stderr[-3000:]
        error = r.stderr[r.stderr.index("sparkenv: error: build failed at step ") :]
        assert "pip download" in error.splitlines()[0], error
        assert "do not match the hashes" in error.lower(), error
        assert token not in r.stdout + r.stderr and "\x1b[" not in error and "Traceback" not in r.stderr
    finally:
        server.shutdown()

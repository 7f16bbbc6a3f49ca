"""The image half of "no credential in anything sparkenv writes": `sparkenv build` from a lock that
holds an index's user-info (written before locks were redacted) against a private index on 127.0.0.1
that demands HTTP basic auth. The build must fetch through the credential, and neither the printed
output, the image's config (labels, environment, history) nor any byte of any layer (docker save) may
hold it."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import artifacts
import build_helpers as bh
import pytest

pytestmark = pytest.mark.docker
USER, SECRET = "alice", "s3cretPlanted42"


def test_an_image_built_through_a_private_index_holds_no_credential(tmp_path: Path) -> None:
    client = bh.engine_or_skip()
    bh.ensure_standin(client)
    wheel = artifacts.write_wheel(tmp_path, "tinypkg", "1.0", {"tinypkg/__init__.py": "GREETING = 'hi'\n"})
    ix = artifacts.Index(tmp_path / "index", pep658=False)
    ix.add(wheel)
    server = artifacts.serve(ix, auth=f"{USER}:{SECRET}")
    tag = "sparkenv-test/credentials:1"
    try:
        with_secret = ix.url.replace("http://", f"http://{USER}:{SECRET}@")
        lock = bh.write_lock(tmp_path, with_secret, {"1-packages": [wheel]}, bh.STANDIN_TAG)
        assert SECRET in lock.read_text()  # the worst case: the lock itself holds it
        cmd = [sys.executable, "-m", "sparkenv", "build", "--lock", str(lock)]
        cmd += ["--profile", str(tmp_path / "standin.toml"), "--base", bh.STANDIN_TAG]
        cmd += ["--platform", "linux/amd64", "--network", "host", "--tag", tag, "--no-cache"]
        env = {**os.environ, "PIP_CERT": "", "SSL_CERT_FILE": ""}
        r = subprocess.run(cmd, capture_output=True, text=True, timeout=900, cwd=tmp_path, env=env)
        assert r.returncode == 0, r.stdout[-3000:] + r.stderr[-3000:]
        assert SECRET not in r.stdout + r.stderr
        # the credential was used: the private index answered the fetch stage (401 without it)
        assert any(path.startswith("/simple/tinypkg") for path, _ in server.requests)  # type: ignore[attr-defined]
        image = client.images.get(tag)
        assert SECRET not in repr(image.attrs) and SECRET not in repr(image.history())
        assert bh.layers_holding(client, tag, SECRET.encode()) == []
        # and the image still knows its index: the lock it keeps names it, without user-info
        kept = client.containers.run(tag, ["cat", "/opt/sparkenv/pylock.toml"], entrypoint=[], remove=True)
        assert ix.url.encode() in kept and SECRET.encode() not in kept
    finally:
        server.shutdown()
        subprocess.run(["docker", "rmi", "-f", tag], capture_output=True, timeout=60)

"""The image's entrypoint chains to its base's own ENTRYPOINT and CMD, read from the base (none, a
vendor's), and the build starts the image once through that entrypoint before it tags it. Real Docker:
bases derived from the NGC-like stand-in, a real `sparkenv build`, real `docker run`s."""

from __future__ import annotations

import io
import os
import subprocess
import sys
import tarfile
from pathlib import Path

import artifacts
import build_helpers as bh
import pytest

pytestmark = pytest.mark.docker
VENDOR = b'#!/bin/sh\necho "vendor entrypoint ran"\nexec "$@"\n'


def _base(client, tag: str, dockerfile: str, files: dict[str, bytes] | None = None) -> None:  # type: ignore[no-untyped-def]
    buf = io.BytesIO()
    with tarfile.open(fileobj=buf, mode="w") as tf:
        for name, data in {"Dockerfile": dockerfile.encode(), **(files or {})}.items():
            info = tarfile.TarInfo(name)
            info.size, info.mode = len(data), 0o755
            tf.addfile(info, io.BytesIO(data))
    buf.seek(0)
    client.images.build(fileobj=buf, custom_context=True, tag=tag, rm=True)


def _build(tmp_path: Path, base: str, tag: str, url: str, wheel: Path) -> subprocess.CompletedProcess[str]:
    lock = bh.write_lock(tmp_path, url, {"1-packages": [wheel]}, bh.STANDIN_TAG)
    cmd = [sys.executable, "-m", "sparkenv", "build", "--lock", str(lock), "--profile"]
    cmd += [str(tmp_path / "standin.toml"), "--base", base, "--platform", "linux/amd64"]
    cmd += ["--network", "host", "--tag", tag, "-q"]
    env = {**os.environ, "PIP_CERT": "", "SSL_CERT_FILE": ""}
    return subprocess.run(cmd, capture_output=True, text=True, timeout=900, cwd=tmp_path, env=env)


def _run(tag: str, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        ["docker", "run", "--rm", "-e", "SPARKENV_GATE=warn", tag, *args],
        capture_output=True,
        text=True,
        timeout=300,
    )


@pytest.mark.parametrize("kind", ["vendor", "none"])
def test_the_image_starts_through_its_bases_own_entrypoint_and_cmd(kind: str, tmp_path: Path) -> None:
    client = bh.engine_or_skip()
    bh.ensure_standin(client)
    base, tag = f"sparkenv-test/base-{kind}:1", f"sparkenv-test/entry-{kind}:1"
    cmd = '["python3", "-c", "print(\\"the base CMD ran\\")"]'
    if kind == "vendor":
        _base(
            client,
            base,
            f'FROM {bh.STANDIN_TAG}\nCOPY vendor.sh /vendor.sh\nENTRYPOINT ["/vendor.sh"]\nCMD {cmd}\n',
            {"vendor.sh": VENDOR},
        )
    else:  # a plain base: no entrypoint at all
        _base(client, base, f"FROM {bh.STANDIN_TAG}\nENTRYPOINT []\nCMD {cmd}\n")
    wheel = artifacts.write_wheel(tmp_path, "tinypkg", "1.0", {"tinypkg/__init__.py": ""})
    try:
        with artifacts.serve_index([wheel]) as url:
            r = _build(tmp_path, base, tag, url, wheel)
        assert r.returncode == 0, r.stdout[-3000:] + r.stderr[-3000:]
        default = _run(tag)  # the base's CMD, through the gate and the base's entrypoint
        assert default.returncode == 0 and "the base CMD ran" in default.stdout, (
            default.stdout + default.stderr
        )
        given = _run(tag, "python3", "-c", "import tinypkg; print('workload ran')")
        assert given.returncode == 0 and "workload ran" in given.stdout, given.stdout + given.stderr
        assert ("vendor entrypoint ran" in default.stdout + given.stdout) == (kind == "vendor")
        assert "verdict:" in given.stderr  # the gate ran first
    finally:
        subprocess.run(["docker", "rmi", "-f", tag, base], capture_output=True, timeout=120)

"""A base whose Python is externally managed (PEP 668: Debian's python3 with its EXTERNALLY-MANAGED
marker, and no PIP_BREAK_SYSTEM_PACKAGES in its environment) builds: the image's installs use the base's
own override, since the image is the environment and the base's packages stay guarded by the build's base
check. The base is the Debian bookworm rootfs the stand-in is made from (debootstrap + docker import).

Before: the build failed at the lock's install step on pip's externally-managed-environment."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import artifacts
import build_helpers as bh
import pytest

pytestmark = pytest.mark.docker


def test_an_externally_managed_base_builds(tmp_path: Path) -> None:
    client = bh.engine_or_skip()
    bh.ensure_standin(client)  # and its rootfs, the PEP 668 base
    managed = (
        "import os, sysconfig; print(os.path.isfile(sysconfig.get_path('stdlib') + '/EXTERNALLY-MANAGED'))"
    )
    marker = client.containers.run(
        bh.ROOTFS_TAG,
        [
            "python3",
            "-c",
            managed,
        ],
        remove=True,
    )
    assert marker.strip() == b"True"  # the base really is externally managed
    wheel = artifacts.write_wheel(tmp_path, "tinypkg", "1.0", {"tinypkg/__init__.py": "X = 1\n"})
    ix = artifacts.Index(tmp_path / "index", pep658=False)
    ix.add(wheel)
    server = artifacts.serve(ix)
    tag = "sparkenv-test/pep668:1"
    try:
        lock = bh.write_lock(tmp_path, ix.url, {"1-packages": [wheel]}, bh.ROOTFS_TAG)
        profile = tmp_path / "standin.toml"  # the rootfs provides nothing of NGC's
        profile.write_text(profile.read_text().split("[provides]")[0] + "[provides]\n")
        cmd = [sys.executable, "-m", "sparkenv", "build", "--lock", str(lock), "--profile", str(profile)]
        cmd += ["--base", bh.ROOTFS_TAG, "--platform", "linux/amd64", "--network", "host", "--tag", tag]
        env = {**os.environ, "PIP_CERT": "", "SSL_CERT_FILE": ""}
        r = subprocess.run(cmd, capture_output=True, text=True, timeout=900, cwd=tmp_path, env=env)
        assert r.returncode == 0, r.stdout[-3000:] + r.stderr[-3000:]
        assert "externally-managed" not in r.stderr
        ran = client.containers.run(tag, ["python3", "-c", "import tinypkg; print(tinypkg.X)"], remove=True)
        assert ran.strip().endswith(b"1")
    finally:
        server.shutdown()
        subprocess.run(["docker", "rmi", "-f", tag], capture_output=True, timeout=60)

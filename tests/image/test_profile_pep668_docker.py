"""`profiles new --from-image` records what it found about PEP 668 in the profile it writes, and prints it:
Debian's python3 carries the EXTERNALLY-MANAGED marker (pip refuses to install into it unless told), the
same python3 without the marker does not. Real images: the Debian bookworm rootfs the stand-in is made
from, and that rootfs with the marker removed.

Before: the profile said nothing of it, and the build failed later on pip's externally-managed-environment."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import build_helpers as bh
import pytest

pytestmark = pytest.mark.docker
UNMANAGED_TAG = "sparkenv-test/debian-unmanaged:1"


def _profiles_new(name: str, image: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if k != "VIRTUAL_ENV"}
    return subprocess.run(
        [sys.executable, "-m", "sparkenv", "profiles", "new", name, "--from-image", image],
        capture_output=True,
        text=True,
        timeout=300,
        cwd=cwd,
        env=env,
    )


def test_profiles_new_records_and_prints_pep_668(tmp_path: Path) -> None:
    client = bh.engine_or_skip()
    bh.ensure_standin(client)  # and its rootfs: Debian's python3, externally managed
    managed = _profiles_new("managed", bh.ROOTFS_TAG, tmp_path)
    assert managed.returncode == 0, managed.stderr
    line = (
        "PEP 668: python3 is externally managed (/usr/lib/python3.11/EXTERNALLY-MANAGED; the image does "
        "not set PIP_BREAK_SYSTEM_PACKAGES): `sparkenv build` installs with PIP_BREAK_SYSTEM_PACKAGES=1"
    )
    assert line in managed.stdout
    assert f"# {line}" in (tmp_path / "managed.toml").read_text()

    client.images.build(
        fileobj=bh.context_tar(
            {"Dockerfile": f"FROM {bh.ROOTFS_TAG}\nRUN rm /usr/lib/python3.11/EXTERNALLY-MANAGED\n".encode()}
        ),
        custom_context=True,
        tag=UNMANAGED_TAG,
        rm=True,
        forcerm=True,
        timeout=300,
    )
    try:
        unmanaged = _profiles_new("unmanaged", UNMANAGED_TAG, tmp_path)
        assert unmanaged.returncode == 0, unmanaged.stderr
        line = "PEP 668: python3 is not externally managed"
        assert line in unmanaged.stdout and f"# {line}" in (tmp_path / "unmanaged.toml").read_text()
        assert "is externally managed" not in unmanaged.stdout
    finally:
        subprocess.run(["docker", "rmi", "-f", UNMANAGED_TAG], capture_output=True, timeout=120)

"""`build --dry-run` prints the Dockerfile the build uses: the labels and the ENTRYPOINT/CMD of the dry run
are those of the image the build then makes, for each kind of base — a custom base given with --base, and
a profile whose image is a local one (no registry digest: its identity is its image ID). Real engine, the
stand-in base, a real wheel on a loopback index.

Before: on a custom base the dry run's ENTRYPOINT lacked the base's own entrypoint and its base-digest label
was empty, while the build chained to the entrypoint and recorded the image ID."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path

import artifacts
import build_helpers as bh
import pytest

pytestmark = pytest.mark.docker


def _dockerfile_says(text: str) -> tuple[dict[str, str], list[str], list[str]]:
    """(labels, ENTRYPOINT, CMD) of a rendered Dockerfile."""
    label_block = re.search(r"^LABEL (.*?)(?<!\\)$", text, re.M | re.S)
    assert label_block, text
    labels = {k: json.loads(v) for k, v in re.findall(r'(\S+?)=("(?:[^"\\]|\\.)*")', label_block.group(1))}
    entry = json.loads(re.search(r"^ENTRYPOINT (.*)$", text, re.M).group(1))  # type: ignore[union-attr]
    cmd = json.loads(re.search(r"^CMD (.*)$", text, re.M).group(1))  # type: ignore[union-attr]
    return labels, entry, cmd


@pytest.mark.parametrize("kind", ["--base custom", "profile's local image"])
def test_the_dry_run_is_the_build(tmp_path: Path, kind: str) -> None:
    client = bh.engine_or_skip()
    bh.ensure_standin(client)
    wheel = artifacts.write_wheel(tmp_path, "tinypkg", "1.0", {"tinypkg/__init__.py": "X = 1\n"})
    ix = artifacts.Index(tmp_path / "index", pep658=False)
    ix.add(wheel)
    server = artifacts.serve(ix)
    tag = f"sparkenv-test/dry-run:{'custom' if kind.startswith('--base') else 'profile'}"
    try:
        lock = bh.write_lock(tmp_path, ix.url, {"1-packages": [wheel]}, bh.STANDIN_TAG)
        args = ["--lock", str(lock), "--profile", str(tmp_path / "standin.toml"), "--platform", "linux/amd64"]
        if kind.startswith("--base"):
            args += ["--base", bh.STANDIN_TAG]
        base = [sys.executable, "-m", "sparkenv", "build", *args]
        env = {**os.environ, "PIP_CERT": "", "SSL_CERT_FILE": ""}
        dry = subprocess.run([*base, "--dry-run"], capture_output=True, text=True, timeout=300, cwd=tmp_path)
        assert dry.returncode == 0, dry.stderr
        labels, entry, cmd = _dockerfile_says(dry.stdout)
        built = subprocess.run(
            [*base, "--network", "host", "--tag", tag],
            capture_output=True,
            text=True,
            timeout=900,
            cwd=tmp_path,
            env=env,
        )
        assert built.returncode == 0, built.stdout[-2000:] + built.stderr[-2000:]
        config = client.images.get(tag).attrs["Config"]
        assert labels == {k: v for k, v in config["Labels"].items() if k in labels}
        assert set(labels) >= {"io.sparkenv.base-digest", "org.opencontainers.image.base.digest"}
        assert labels["io.sparkenv.base-digest"] == client.images.get(bh.STANDIN_TAG).id  # a local image's ID
        assert entry == config["Entrypoint"] and entry[-1] == "/opt/nvidia/nvidia_entrypoint.sh"
        assert cmd == (config["Cmd"] or [])
    finally:
        server.shutdown()
        subprocess.run(["docker", "rmi", "-f", tag], capture_output=True, timeout=60)

"""Profiles as users write and get them: defaults for a hand-written one, `sparkenv profiles` output, and
`sparkenv profiles new --from-image` on the real stand-in image, round-tripped through lock and build."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import artifacts
import build_helpers as bh
import pytest

from sparkenv.core.datafiles import parse_toml

REPO = Path(__file__).resolve().parents[1]


def sparkenv(*args: str, cwd: Path = REPO, timeout: float = 600) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "sparkenv", *args],
        capture_output=True,
        text=True,
        timeout=timeout,
        cwd=cwd,
        env={**os.environ, "PIP_CERT": "", "SSL_CERT_FILE": ""},
    )


def test_a_hand_written_profile_needs_only_name_and_image(tmp_path: Path) -> None:
    (tmp_path / "mine.toml").write_text('name = "mine"\nimage = "registry.example/me/train:1"\n')
    (tmp_path / "requirements.txt").write_text("transformers==4.57.1\n")
    proc = sparkenv("check", "requirements.txt", "--profile", "mine.toml", cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr
    # the Spark's platform as the default: aarch64, Python 3.12, CUDA 13.0, glibc 2.39
    assert "mine (registry.example/me/train:1, Python 3.12, CUDA 13.0, aarch64-manylinux_2_39)" in proc.stdout
    (tmp_path / "what.toml").write_text('name = "what"\n')
    bad = sparkenv("check", "requirements.txt", "--profile", "what.toml", cwd=tmp_path)
    assert bad.returncode == 2 and bad.stderr.count("\n") == 1
    assert "what.toml: profile lacks image" in bad.stderr and "profiles new" in bad.stderr


def test_profiles_lists_each_once_with_sources_as_urls() -> None:
    proc = sparkenv("profiles")
    assert proc.returncode == 0, proc.stderr
    heads = [line for line in proc.stdout.splitlines() if line and not line.startswith(" ")]
    names = [h.split()[0] for h in heads[:-1]]
    assert "ngc-25.11" in names and "ngc-vllm-26.01" in names and "unsloth-dgx-spark" in names
    assert len(names) == len(set(names))
    assert " ?" not in proc.stdout and "version not recorded: torchvision" in proc.stdout
    sources = [line.split("source ", 1)[1] for line in proc.stdout.splitlines() if "· source " in line]
    assert sources and all(s.startswith("https://") for s in sources), sources
    assert "shared/" not in proc.stdout


@pytest.mark.docker
def test_profile_from_the_stand_in_image_round_trips_through_lock_and_build(tmp_path: Path) -> None:
    client = bh.engine_or_skip()
    bh.ensure_standin(client)
    out = tmp_path / "standin-gen.toml"
    made = sparkenv("profiles", "new", "standin-gen", "--from-image", bh.STANDIN_TAG, "-o", str(out))
    assert made.returncode == 0, made.stderr
    assert f"wrote {out}" in made.stdout and "UNVERIFIED" in made.stdout
    data = parse_toml(out.read_text())
    assert data["python"] == "3.11.2" and data["glibc"] == "2.36" and data["manylinux"] == "manylinux_2_36"
    assert data["platform"] == "linux/amd64"
    assert data["provides"] == bh.PROVIDES  # read from the image's dist-packages, with their versions
    assert data["satisfies"] == {"triton": "pytorch-triton"}
    assert data["env"]["PIP_CONSTRAINT"] == "/etc/pip/constraint.txt"
    assert client.images.get(bh.STANDIN_TAG).id in data["source"]
    again = sparkenv("profiles", "new", "standin-gen", "--from-image", bh.STANDIN_TAG, "-o", str(out))
    assert again.returncode == 2 and "exists; pass --force" in again.stderr
    assert not list(tmp_path.glob(".*.tmp"))

    wheels = tmp_path / "wheels"
    wheels.mkdir()
    tiny = artifacts.write_wheel(wheels, "tinypkg", "1.0", requires=["torch>=2.0"])
    (tmp_path / "requirements.txt").write_text("tinypkg==1.0\n")
    ref = "sparkenv-test/generated:1"
    with artifacts.serve_index([tiny]) as index:
        lock = sparkenv(
            "lock",
            "requirements.txt",
            "--profile",
            out.name,
            "--index-url",
            index,
            "--output-dir",
            "lockfiles",
            cwd=tmp_path,
        )
        assert lock.returncode == 0, lock.stdout + lock.stderr
        pylock = parse_toml((tmp_path / "lockfiles" / "pylock.standin-gen.toml").read_text())
        assert [p["name"] for p in pylock["packages"]] == ["tinypkg"]  # torch: the image provides it
        build = sparkenv(
            "build",
            "--lock",
            "lockfiles/pylock.standin-gen.toml",
            "--profile",
            out.name,
            "--network",
            "host",
            "--tag",
            ref,
            "-q",
            cwd=tmp_path,
        )
    assert build.returncode == 0, build.stdout + build.stderr[-3000:]
    assert f"tagged {ref}" in build.stdout
    assert client.images.get(ref).labels["io.sparkenv.profile"] == "standin-gen"
    client.images.remove(ref, force=True)

"""`build --tag` is checked against Docker's reference grammar before anything is built (issue 11, item 8):
`--tag 'Bad Tag!!'` used to build and audit the whole image and then exit 70; `--dry-run` accepted it."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from sparkenv.core.errors import SparkenvError
from sparkenv.core.image_reference import check_tag

REPO = Path(__file__).resolve().parents[2]
LOCK = REPO / "lockfiles" / "pylock.ngc-25-11.toml"


def build(*args: str, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "sparkenv", "build", "--lock", str(LOCK), *args],
        capture_output=True,
        text=True,
        timeout=120,
        cwd=REPO,
        env={**os.environ, **(env or {})},
    )


@pytest.mark.parametrize(
    "bad", ["Bad Tag!!", "x:", ":1", "-x", "a//b", "a/b@sha256:" + "0" * 64, "x:" + "a" * 129]
)
def test_a_bad_tag_is_exit_2_under_dry_run(bad: str):
    proc = build("--dry-run", "--tag", bad)
    assert proc.returncode == 2, proc.stdout + proc.stderr
    assert len(proc.stderr.strip().splitlines()) == 1 and "not a valid Docker image reference" in proc.stderr
    assert proc.stdout == ""  # nothing rendered


def test_a_bad_tag_is_refused_before_the_engine_is_asked(tmp_path: Path):
    # no engine behind DOCKER_HOST: a bad tag is named first (exit 2), not the missing engine (exit 3)
    proc = build("--tag", "Bad Tag!!", env={"DOCKER_HOST": f"unix://{tmp_path}/none.sock"})
    assert proc.returncode == 2 and "--tag 'Bad Tag!!'" in proc.stderr


@pytest.mark.parametrize(
    "good",
    [
        "my/train:1",
        "train",
        "localhost:5000/team/train:v1.0",
        "registry.example.com/a/b_c__d-e.f:T_1",
        "[::1]:5000/x",
    ],
)
def test_names_docker_accepts_pass(good: str):
    assert check_tag(good) == good


def test_upper_case_repository_gets_the_lower_case_hint():
    with pytest.raises(SparkenvError, match="lower case: my/train:1"):
        check_tag("my/Train:1")


def test_good_tag_under_dry_run_is_the_one_it_would_tag():
    proc = build("--dry-run", "--tag", "localhost:5000/team/train:v1")
    assert proc.returncode == 0 and "# would tag localhost:5000/team/train:v1 after" in proc.stdout


def test_a_bad_platform_in_the_lock_is_blamed_on_the_lock_not_the_option(tmp_path: Path):
    """Issue 11 item 9: a bad lock platform was reported as a bad --platform."""
    for name in ("pylock.ngc-25-11.toml", "requirements.ngc-25-11.txt"):
        (tmp_path / name).write_bytes((LOCK.parent / name).read_bytes())
    lock = tmp_path / "pylock.ngc-25-11.toml"
    lock.write_text(lock.read_text().replace('platform = "linux/aarch64"', 'platform = "linux/s390x"', 1))
    proc = subprocess.run(
        [sys.executable, "-m", "sparkenv", "build", "--dry-run", "--lock", str(lock)],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert proc.returncode == 2 and f"{lock}: [tool.sparkenv] platform = 'linux/s390x'" in proc.stderr
    assert "--platform" not in proc.stderr

"""`sparkenv build` without an engine: the rendered Dockerfile and context (--dry-run), bad input (exit 2),
no engine (exit 3). Real processes of the CLI; nothing faked."""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from sparkenv.core.report import LINE_RE

REPO = Path(__file__).resolve().parents[2]
LOCK = REPO / "lockfiles" / "pylock.ngc-25-11.toml"


def run(*args: str, env: dict[str, str] | None = None, cwd: Path = REPO) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "sparkenv", "build", *args],
        capture_output=True,
        text=True,
        timeout=300,
        cwd=cwd,
        env={**os.environ, **(env or {})},
    )


def dry(*args: str) -> tuple[str, list[str]]:
    proc = run("--dry-run", "--lock", str(LOCK), *args)
    assert proc.returncode == 0, proc.stderr
    dockerfile = "\n".join(line for line in proc.stdout.splitlines() if not line.startswith("#   "))
    files = [line[4:].split(" (")[0] for line in proc.stdout.splitlines() if line.startswith("#   ")]
    return dockerfile, files


def test_dry_run_renders_the_shipped_lock_on_ngc_by_digest() -> None:
    text, files = dry("--ca-bundle", "/etc/ssl/certs/ca-certificates.crt")
    froms = re.findall(r"^FROM (\S+)", text, re.M)
    # both stages FROM the profile's image pinned by digest
    assert (
        froms
        == [
            "nvcr.io/nvidia/pytorch:25.11-py3@sha256:417cbf33f87b5378849df37983552cd1f8bc8b62fe1ceabe004de816a55dff21"
        ]
        * 2
    )
    final = text.split("\nFROM ")[-1]
    # every install is --no-deps --require-hashes, stages in the lock's order, then the base check
    installs = re.findall(r"pip install --no-deps --require-hashes .* -r /tmp/sparkenv-lock/(\S+)", final)
    assert installs == ["requirements.1-packages.txt", "requirements.2-unsloth.txt"]
    assert final.index("base_check.py snapshot") < final.index("requirements.1-packages.txt")
    assert final.index("requirements.2-unsloth.txt") < final.index("base_check.py compare")
    assert "snapshot /opt/sparkenv/base-packages.json torch pytorch-triton" in final
    # the CA bundle is seen by the fetch stage only, never by the image
    assert "ca/ca.pem" in text.split("\nFROM ")[1] and "ca.pem" not in final and "PIP_CERT" not in final
    assert "ca/ca.pem" in files
    # the gate in front of NGC's entrypoint; labels
    assert 'ENTRYPOINT ["/usr/local/bin/sparkenv", "gate", "--", "/opt/nvidia/nvidia_entrypoint.sh"]' in final
    for label in (
        'io.sparkenv.profile="ngc-25.11"',
        'io.sparkenv.lock-hash="sha256:',
        "io.sparkenv.version=",
        'io.sparkenv.base-digest="sha256:417cbf33',
        "org.opencontainers.image.base.name=",
    ):
        assert label in final
    # classic builder only
    assert not re.search(r"RUN --mount|COPY --link|^# syntax=|<<", text, re.M)
    # sparkenv from a wheel of the running sparkenv, its runtime wheels for the image's Python and CPU
    assert any(re.fullmatch(r"sparkenv/runtime/sparkenv-[\w.]+-py3-none-any\.whl", f) for f in files)
    assert any("pydantic_core" in f and "cp312" in f and "aarch64" in f for f in files)
    assert {
        "Dockerfile",
        "lock/pylock.toml",
        "lock/requirements.1-packages.txt",
        "sparkenv/base_check.py",
    } <= set(files)


def test_dry_run_sdpa_and_base_override() -> None:
    text, _ = dry("--base", "my.mirror/pytorch:25.11", "--sdpa")
    assert re.findall(r"^FROM (\S+)", text, re.M) == ["my.mirror/pytorch:25.11"] * 2
    assert 'RUN /usr/local/bin/sparkenv patch sdpa --install "$(command -v python3)"' in text
    plain, _ = dry()
    assert "patch sdpa --install" not in plain


def test_bad_lock_is_one_line_exit_2(tmp_path: Path) -> None:
    bad = tmp_path / "pylock.x.toml"
    bad.write_text("this is = = not toml\n")
    proc = run("--dry-run", "--lock", str(bad))
    assert proc.returncode == 2
    assert proc.stderr.count("\n") == 1 and str(bad) in proc.stderr and "Traceback" not in proc.stderr
    proc = run("--dry-run", "--lock", str(tmp_path / "pylock.missing.toml"))
    assert proc.returncode == 2 and "no such lock" in proc.stderr


def test_no_engine_is_exit_3_with_the_fix(tmp_path: Path) -> None:
    # A real absent engine: DOCKER_HOST names a socket nobody listens on.
    proc = run("--lock", str(LOCK), "-q", env={"DOCKER_HOST": f"unix://{tmp_path}/docker.sock"})
    assert proc.returncode == 3, proc.stderr
    assert proc.stderr.count("\n") == 1 and "no Docker engine answers" in proc.stderr
    assert "dockerd" in proc.stderr and "Traceback" not in proc.stderr


def test_a_lock_that_replaces_a_base_package_on_purpose_is_labelled_and_not_guarded(tmp_path) -> None:
    for name in ("pylock.ngc-25-11.toml", "requirements.ngc-25-11.txt"):
        text = (LOCK.parent / name).read_text()
        if name.startswith("pylock"):  # as `sparkenv lock --allow-replace torch` records it
            text = text.replace("[tool.sparkenv]\n", '[tool.sparkenv]\nallow-replace = ["torch"]\n')
        (tmp_path / name).write_text(text)
    proc = run("--dry-run", "--lock", str(tmp_path / "pylock.ngc-25-11.toml"))
    assert proc.returncode == 0, proc.stderr
    final = proc.stdout.split("\nFROM ")[-1]
    assert 'io.sparkenv.allow-replace="torch"' in final
    snapshot = next(ln for ln in final.splitlines() if "base_check.py snapshot" in ln)
    assert " torch " not in f"{snapshot} " and "pytorch-triton" in snapshot


@pytest.mark.parametrize(
    ("driver", "line"),
    [
        (
            "575.57.08",
            "G1 WARN: driver 575.57.08 cannot run CUDA 13.0.2 of profile ngc-25.11: it needs >= 580.95.05",
        ),
        ("580.82.07", "G1 WARN: driver 580.82.07 is older than CUDA 13.0.2 of profile ngc-25.11 needs"),
        ("580.95.05", "G1 PASS: driver 580.95.05 runs CUDA 13.0.2 of profile ngc-25.11"),
    ],
)
def test_driver_against_the_profiles_cuda(driver, line):
    """Build time: a driver too old for the profile's CUDA is a WARN (the image may run elsewhere)."""
    proc = run("--dry-run", "--lock", str(LOCK), "--driver", driver)
    assert proc.returncode == 0, proc.stderr
    assert any(ln.startswith(line) for ln in proc.stdout.splitlines()), proc.stdout[:600]
    assert "--gpu 12.1` in the image" in proc.stdout


@pytest.mark.parametrize(
    ("args", "word"), [(("--driver", "new"), "--driver"), (("--gpu", "twelve"), "--gpu")]
)
def test_bad_driver_or_gpu(args, word):
    proc = run("--dry-run", "--lock", str(LOCK), *args)
    assert proc.returncode == 2 and word in proc.stderr and "Traceback" not in proc.stderr


def test_without_lock_the_one_lock_present_is_built(tmp_path: Path) -> None:
    """No --lock, no profile named, and the default profile's lock is not there: the one lock present is
    the one built; with two, one line lists them (exit 2). Before: "no such lock" for the default's path
    with a lock right beside it."""
    (tmp_path / ".git").mkdir()
    locks = tmp_path / "lockfiles"
    (locks / "inputs").mkdir(parents=True)
    shutil.copy(LOCK, locks / "pylock.mine.toml")
    shutil.copy(LOCK.with_name("requirements.ngc-25-11.txt"), locks)
    shutil.copy(LOCK.parent / "inputs" / "playbook-unsloth.txt", locks / "inputs")
    proc = run("--dry-run", cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr
    dockerfile = [ln for ln in proc.stdout.splitlines() if not LINE_RE.match(ln)]  # findings come first
    assert dockerfile[0].startswith("# A sparkenv image: ngc-25.11 + pylock.mine.toml."), proc.stdout[:300]
    shutil.copy(LOCK, locks / "pylock.yours.toml")
    proc = run("--dry-run", cwd=tmp_path)
    assert proc.returncode == 2 and proc.stdout == "", proc.stdout
    assert proc.stderr.strip().splitlines() == [
        "sparkenv: error: lockfiles: no pylock.ngc-25-11.toml (the default profile's lock) and 2 other "
        "locks: pylock.mine.toml, pylock.yours.toml; name one with --lock FILE or --profile NAME"
    ]


def test_a_steps_colour_codes_are_not_quoted() -> None:
    """pip colours its errors (`\\x1b[91merror: externally-managed-environment`, as a PEP 668 base printed
    it in a real build): the failure's quoted log holds the text, not the escape codes."""
    from sparkenv.image.engine import Progress

    progress = Progress(quiet=True)
    progress.line("Step 10/19 : RUN python3 -m pip install x\n")
    progress.line(
        "\x1b[91merror: externally-managed-environment\x1b[0m\n\x1b[31m×\x1b[0m This environment is\n"
    )
    assert list(progress.tail) == ["error: externally-managed-environment", "× This environment is"]

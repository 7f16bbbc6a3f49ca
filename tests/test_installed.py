"""sparkenv as users get it: a wheel of this checkout installed (not editable) into a fresh venv, run from
a folder that is not a checkout. Without extras check/audit/gate work and lock/build say which extra they
need (exit 3); `build --dry-run` works from the installed package data; with [build] a real image is built
on the stand-in base from that installed sparkenv, and the image's sparkenv is the installed one.

The venvs are made with uv (a test dependency) from a wheel built here with pip; their dependencies come
from PyPI (hence `network`).
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import artifacts
import build_helpers as bh
import pytest

pytestmark = pytest.mark.network
REPO = Path(__file__).resolve().parents[1]


def _uv() -> str:
    import uv

    return str(uv.find_uv_bin())


@pytest.fixture(scope="module")
def sparkenv_wheel(tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("dist")
    proc = subprocess.run(
        [sys.executable, "-m", "pip", "wheel", "--no-deps", "-q", "-w", str(out), str(REPO)],
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert proc.returncode == 0, proc.stderr[-2000:]
    (wheel,) = out.glob("sparkenv-*.whl")
    return wheel


def _venv(folder: Path, requirement: str) -> Path:
    """A fresh venv (with pip: build downloads the image's runtime wheels with it) holding `requirement`."""
    env = {k: v for k, v in os.environ.items() if k not in ("VIRTUAL_ENV", "PYTHONPATH")}
    subprocess.run(
        [_uv(), "venv", "-q", "--seed", "--python", sys.executable, str(folder)],
        check=True,
        timeout=300,
        env=env,
    )
    proc = subprocess.run(
        [_uv(), "pip", "install", "-q", "--python", str(folder / "bin" / "python"), requirement],
        capture_output=True,
        text=True,
        timeout=600,
        env=env,
    )
    assert proc.returncode == 0, proc.stderr[-2000:]
    return folder


@pytest.fixture(scope="module")
def light(tmp_path_factory: pytest.TempPathFactory, sparkenv_wheel: Path) -> Path:
    return _venv(tmp_path_factory.mktemp("light") / "venv", str(sparkenv_wheel))


@pytest.fixture
def project(tmp_path: Path) -> Path:
    """A user's project folder (not a checkout) with the shipped lock in its lockfiles/."""
    proj = tmp_path / "work" / "project"
    (proj / "lockfiles").mkdir(parents=True)
    for name in ("pylock.ngc-25-11.toml", "requirements.ngc-25-11.txt"):
        shutil.copy(REPO / "lockfiles" / name, proj / "lockfiles" / name)
    (proj / "requirements.txt").write_text("transformers==4.57.1\nnvidia-cuda-runtime-cu12\n")
    (proj / "clean.txt").write_text("transformers==4.57.1\n")
    return proj


def _path_without_uv() -> str:
    """PATH minus the folders holding a uv binary: `sparkenv lock` also finds uv on PATH, and a light
    install on a machine without uv is what is tested."""
    keep = [d for d in os.environ.get("PATH", "").split(os.pathsep) if d and not (Path(d) / "uv").exists()]
    return os.pathsep.join(keep)


def sparkenv(venv: Path, cwd: Path, *args: str, timeout: float = 300) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if k not in ("VIRTUAL_ENV", "PYTHONPATH")}
    env.update({"PIP_CERT": "", "SSL_CERT_FILE": "", "PATH": _path_without_uv()})
    return subprocess.run(
        [str(venv / "bin" / "sparkenv"), *args],
        capture_output=True,
        text=True,
        timeout=timeout,
        cwd=cwd,
        env=env,
    )


def test_without_extras_the_light_commands_work(light: Path, project: Path) -> None:
    version = sparkenv(light, project, "--version")
    assert version.returncode == 0
    assert version.stdout.startswith("sparkenv 0.") and "site-packages" in version.stdout
    assert sparkenv(light, project, "-V").stdout == version.stdout
    # neither uv nor docker came with the light install
    probe = subprocess.run(
        [
            str(light / "bin" / "python"),
            "-c",
            "import importlib.util as u; print(u.find_spec('uv'), u.find_spec('docker'))",
        ],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert probe.stdout.split() == ["None", "None"]

    check = sparkenv(light, project, "check", "requirements.txt")
    assert check.returncode == 1, check.stderr
    assert "G1 FAIL: nvidia-cuda-runtime-cu12 (requirements.txt:2)" in check.stdout
    assert check.stdout.endswith("verdict: blocked (1 FAIL)\n")

    audit = sparkenv(light, project, "audit", str(light))
    assert audit.returncode == 0, audit.stdout + audit.stderr
    assert "G1 INFO: read " in audit.stdout and "verdict: ready" in audit.stdout
    # which environment was read: its interpreter and folder (on a terminal also the first line, on stderr)
    as_json = json.loads(sparkenv(light, project, "audit", str(light), "--json").stdout)
    assert as_json["context"]["read"].startswith(f"{light}/bin/python")
    assert f"{light}/lib/python" in as_json["context"]["read"]

    gate = sparkenv(light, project, "gate", "--policy", "warn", "--", "true", timeout=120)
    assert gate.returncode == 0, gate.stderr
    assert "G10 " in gate.stderr and "verdict:" in gate.stderr


def test_without_extras_lock_and_build_name_the_extra(light: Path, project: Path) -> None:
    lock = sparkenv(light, project, "lock", "clean.txt")
    assert lock.returncode == 3, lock.stderr
    assert "pip install 'sparkenv[lock]'" in lock.stderr and lock.stderr.count("\n") == 1
    build = sparkenv(light, project, "build", "-q")
    assert build.returncode == 3, build.stderr
    assert "pip install 'sparkenv[build]'" in build.stderr and build.stderr.count("\n") == 1
    new = sparkenv(light, project, "profiles", "new", "mine", "--from-image", "debian:12")
    assert new.returncode == 3, new.stderr
    assert "pip install 'sparkenv[build]'" in new.stderr and new.stderr.count("\n") == 1


def test_build_dry_run_from_an_installed_sparkenv_in_a_project_folder(light: Path, project: Path) -> None:
    dry = sparkenv(light, project, "build", "--dry-run")
    assert dry.returncode == 0, dry.stderr
    assert "FROM nvcr.io/nvidia/pytorch:25.11-py3@sha256:" in dry.stdout
    assert "# A sparkenv image: ngc-25.11 + pylock.ngc-25-11.toml." in dry.stdout  # the packaged template
    assert "#   sparkenv/runtime/sparkenv-0.1.0-py3-none-any.whl (" in dry.stdout
    # a profile file given relative to the working directory, as the user typed it
    shutil.copy(REPO / "sparkenv/data/profiles/ngc-25.11.toml", project.parent / "my-profile.toml")
    rel = sparkenv(light, project, "build", "--dry-run", "--profile", "../my-profile.toml")
    assert rel.returncode == 0, rel.stderr
    missing = sparkenv(light, project, "build", "--dry-run", "--profile", "../nowhere.toml")
    assert missing.returncode == 2 and "../nowhere.toml: cannot read profile file" in missing.stderr


@pytest.mark.docker
def test_an_installed_sparkenv_builds_an_image_that_runs_it(
    tmp_path_factory: pytest.TempPathFactory, sparkenv_wheel: Path, tmp_path: Path
) -> None:
    client = bh.engine_or_skip()
    bh.ensure_standin(client)
    venv = _venv(tmp_path_factory.mktemp("full") / "venv", f"sparkenv[build] @ {sparkenv_wheel.as_uri()}")
    proj = tmp_path / "project"
    proj.mkdir()
    wheel = artifacts.write_wheel(tmp_path, "tinypkg", "1.0")
    ref = "sparkenv-test/installed:1"
    with artifacts.serve_index([wheel]) as index:
        bh.write_lock(proj, index, {"1-packages": [wheel]}, bh.STANDIN_TAG)
        proc = sparkenv(
            venv,
            proj,
            "build",
            "--lock",
            "pylock.standin.toml",
            "--profile",
            "standin.toml",
            "--base",
            bh.STANDIN_TAG,
            "--platform",
            "linux/amd64",
            "--network",
            "host",
            "--tag",
            ref,
            "-q",
            timeout=600,
        )
    assert proc.returncode == 0, proc.stderr[-3000:] + proc.stdout
    assert f"tagged {ref}" in proc.stdout
    inside = subprocess.run(
        ["docker", "run", "--rm", "--entrypoint", "/usr/local/bin/sparkenv", ref, "--version"],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert inside.returncode == 0, inside.stderr
    assert inside.stdout.startswith("sparkenv 0.1.0 (/opt/sparkenv/lib/sparkenv;"), inside.stdout
    client.images.remove(ref, force=True)

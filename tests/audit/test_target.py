"""TARGET forms: venv, site-packages folder, interpreter path, $VIRTUAL_ENV, the running environment."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest


@pytest.fixture
def real_venv(tmp_path: Path, elves):
    """A venv made by the real `python -m venv`, with one CUDA 12 consumer placed in it."""
    from conftest import Env

    prefix = tmp_path / "realvenv"
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(prefix)], check=True, timeout=120)
    site = next(prefix.glob("lib/python3*/site-packages"))
    env = Env(prefix, site, "x86_64")
    env.add("kernels", "1.0", files={"kernels/_k.so": elves.linked(("libcudart.so.12",))})
    return env


def _summary(run, *args) -> dict:
    return run("audit", *args, "--json").json()


def test_venv_site_packages_and_interpreter_name_the_same_environment(real_venv, run, clean_root):
    by_prefix = _summary(run, str(real_venv.prefix), "--root", str(clean_root))
    by_site = _summary(run, str(real_venv.site), "--root", str(clean_root))
    by_python = _summary(run, str(real_venv.prefix / "bin" / "python"), "--root", str(clean_root))
    for data in (by_prefix, by_site, by_python):
        assert data["context"]["distributions"] == 1
        assert data["context"]["python"] == f"{sys.version_info.major}.{sys.version_info.minor}"
        assert data["context"]["machine"] == "x86_64"
        assert [f["subject"] for f in data["findings"] if f["status"] == "FAIL"] == ["kernels"]


def test_virtual_env_is_the_default_target(real_venv, run, clean_root):
    r = run("audit", "--root", str(clean_root), env={"VIRTUAL_ENV": str(real_venv.prefix)})
    assert r.code == 1
    assert r.line("G1", "kernels").startswith("G1 FAIL")


def test_without_target_the_running_environment_is_read(run, clean_root):
    data = run("audit", "--root", str(clean_root), "--json").json()
    assert "running interpreter" in data["target"]
    assert data["context"]["distributions"] >= 5  # sparkenv's own dependencies at least
    names = {f["subject"] for f in data["findings"]}
    assert "environment" in names


def test_machine_is_read_from_the_interpreter(arm_env, run, clean_root):
    data = _summary(run, str(arm_env.prefix), "--root", str(clean_root))
    assert data["context"]["machine"] == "aarch64"
    env_line = next(f for f in data["findings"] if f["subject"] == "environment")
    assert any("interpreter" in e for e in env_line["evidence"])


def test_system_site_packages_venv_sees_the_base(tmp_path: Path, real_venv, run, clean_root):
    child = tmp_path / "child"
    home = real_venv.prefix / "bin"
    child.mkdir()
    (child / "pyvenv.cfg").write_text(
        f"home = {home}\ninclude-system-site-packages = true\n"
        f"version = {sys.version_info.major}.{sys.version_info.minor}.0\n"
    )
    site = child / "lib" / f"python{sys.version_info.major}.{sys.version_info.minor}" / "site-packages"
    site.mkdir(parents=True)
    data = _summary(run, str(child), "--root", str(clean_root))
    assert data["context"]["distributions"] == 1
    assert len(data["context"]["site_dirs"]) == 2

"""Paths named inside a lock stay inside its project (issue 11, item 3): `lock --check` with
`inputs = ["../../../../etc/shadow"]`, `build` with `requirements = "../../…"`, a profile *name* like
`../../../x` that would become a path of the written lock. Each is exit 2 naming the entry, and no byte
of the outside file is printed. The outside file here is a real secret file planted outside the project,
with a recognisable first line."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]
SHIPPED = REPO / "lockfiles"
SECRET = "TOP-SECRET-FIRST-LINE"


def cli(*args: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if k != "VIRTUAL_ENV"}
    return subprocess.run(
        [sys.executable, "-m", "sparkenv", *args],
        capture_output=True,
        text=True,
        timeout=120,
        cwd=cwd,
        env=env,
    )


@pytest.fixture
def project(tmp_path: Path) -> Path:
    """A stranger's project: pyproject.toml, lockfiles/ with the shipped lock; a secret beside it."""
    from artifacts import stranger_project

    return stranger_project(tmp_path, f"{SECRET}\npassword\n")


def rewrite(lock: Path, key: str, value: str) -> None:
    text = lock.read_text()
    lock.write_text(re.sub(rf"^{key} = .*$", f"{key} = {value}", text, count=1, flags=re.M))


def refused(proc: subprocess.CompletedProcess[str], entry: str) -> None:
    assert proc.returncode == 2, proc.stdout + proc.stderr
    assert SECRET not in proc.stdout + proc.stderr and "password" not in proc.stdout + proc.stderr
    assert len(proc.stderr.strip().splitlines()) == 1 and "internal error" not in proc.stderr
    assert f"{entry!r} points outside the project folder" in proc.stderr or entry in proc.stderr, proc.stderr


def test_the_shipped_lock_checks_current_in_a_copied_project(project: Path):
    proc = cli("lock", "--check", "--output-dir", "lockfiles", cwd=project)
    assert proc.returncode == 0, proc.stdout + proc.stderr


def test_lock_check_refuses_an_input_outside_the_project(project: Path):
    lock = project / "lockfiles" / "pylock.ngc-25-11.toml"
    entry = "../../../secret.txt"
    assert (project / "lockfiles" / entry).resolve().read_text().startswith(SECRET)  # it is really there
    rewrite(lock, "inputs", f'["{entry}"]')
    proc = cli("lock", "--check", "--output-dir", "lockfiles", cwd=project)
    refused(proc, entry)
    assert "[tool.sparkenv] inputs" in proc.stderr


def test_lock_check_refuses_the_etc_shadow_repro(project: Path):
    rewrite(
        project / "lockfiles" / "pylock.ngc-25-11.toml", "inputs", '["../../../../../../../../etc/shadow"]'
    )
    proc = cli("lock", "--check", "--output-dir", "lockfiles", cwd=project)
    refused(proc, "../../../../../../../../etc/shadow")


def test_lock_check_refuses_a_symlinked_input_that_leaves_the_project(project: Path):
    link = project / "lockfiles" / "inputs" / "innocent.txt"
    link.symlink_to(project.parent.parent / "secret.txt")
    rewrite(project / "lockfiles" / "pylock.ngc-25-11.toml", "inputs", '["inputs/innocent.txt"]')
    refused(cli("lock", "--check", "--output-dir", "lockfiles", cwd=project), "inputs/innocent.txt")


def test_lock_check_refuses_an_include_that_leaves_the_project(project: Path):
    (project / "lockfiles" / "inputs" / "playbook-unsloth.txt").write_text(
        "-r ../../../../secret.txt\npeft\n"
    )
    proc = cli("lock", "--check", "--output-dir", "lockfiles", cwd=project)
    refused(proc, "../../../../secret.txt")
    assert "playbook-unsloth.txt:1" in proc.stderr


def test_lock_check_refuses_a_profile_file_outside_the_project(project: Path):
    rewrite(project / "lockfiles" / "pylock.ngc-25-11.toml", "profile", '"../../../secret.toml"')
    refused(cli("lock", "--check", "--output-dir", "lockfiles", cwd=project), "../../../secret.toml")


def test_build_refuses_requirements_outside_the_lock_folder(project: Path):
    rewrite(project / "lockfiles" / "pylock.ngc-25-11.toml", "requirements", '"../../../secret.txt"')
    proc = cli("build", "--dry-run", "--lock", "lockfiles/pylock.ngc-25-11.toml", cwd=project)
    refused(proc, "../../../secret.txt")
    assert "must be a file name beside the lock" in proc.stderr


def test_build_refuses_a_requirements_symlink_out_of_the_project(project: Path):
    req = project / "lockfiles" / "requirements.ngc-25-11.txt"
    req.unlink()
    req.symlink_to(project.parent.parent / "secret.txt")
    proc = cli("build", "--dry-run", "--lock", "lockfiles/pylock.ngc-25-11.toml", cwd=project)
    refused(proc, "requirements.ngc-25-11.txt")


def test_a_profile_name_with_a_path_is_refused(project: Path):
    prof = (REPO / "sparkenv" / "data" / "profiles" / "ngc-25.11.toml").read_text()
    (project / "mine.toml").write_text(re.sub(r"^name = .*$", 'name = "../../../x"', prof, flags=re.M))
    (project / "requirements.txt").write_text("peft\n")
    proc = cli("lock", "requirements.txt", "--profile", "mine.toml", cwd=project)
    assert proc.returncode == 2 and "name '../../../x' may hold only a-z, 0-9" in proc.stderr
    assert not list(project.parent.parent.glob("**/pylock.*x*.toml"))


# Every include form pip reads, each read by pip-requirements-parser's own line parsing (lock/includes.py),
# so the fence sees the file the parser would open: a regular expression missed all but the first.
@pytest.mark.parametrize(
    "line",
    [
        "-r ../../../../secret.txt",
        "-r../../../../secret.txt",
        "-c../../../../secret.txt",
        "--pre -r ../../../../secret.txt",
        "-r\\\n../../../../secret.txt",
        "--requirement=../../../../secret.txt",
        "--constraint ../../../../secret.txt",
    ],
    ids=[
        "spaced",
        "attached",
        "constraint-attached",
        "after-an-option",
        "continued",
        "long-equals",
        "long-c",
    ],
)
def test_every_include_form_is_fenced(project: Path, line: str):
    (project / "lockfiles" / "inputs" / "playbook-unsloth.txt").write_text(f"peft\n{line}\n")
    proc = cli("lock", "--check", "--output-dir", "lockfiles", cwd=project)
    refused(proc, "../../../../secret.txt")
    assert "playbook-unsloth.txt:2" in proc.stderr


def test_more_includes_than_the_cap_are_refused_not_cut_short(project: Path):
    """Past the cap the parser went on reading files the fence never saw; now the lock is refused."""
    inputs = project / "lockfiles" / "inputs"
    for i in range(1001):
        (inputs / f"r{i}.txt").write_text(f"-r r{i + 1}.txt\n")
    (inputs / "r1001.txt").write_text("-r ../../../../secret.txt\n")
    (inputs / "playbook-unsloth.txt").write_text("-r r0.txt\n")
    proc = cli("lock", "--check", "--output-dir", "lockfiles", cwd=project)
    assert proc.returncode == 2 and SECRET not in proc.stdout + proc.stderr, proc.stderr
    assert "includes more than 1000 requirements files" in proc.stderr

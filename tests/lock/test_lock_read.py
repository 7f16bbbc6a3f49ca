"""The lock has one owner (sparkenv/lock/): the shipped lock reads back into its stages, the hashed
requirements file is the one writer's rendering of the pylock, and a lock whose parts disagree is exit 2
with one line naming the file — for build, audit --lock and lock --check alike. Real CLI processes on
copies of the shipped lock."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from sparkenv.lock import read, write

REPO = Path(__file__).resolve().parents[2]
SHIPPED = REPO / "lockfiles"
PYLOCK, REQS = "pylock.ngc-25-11.toml", "requirements.ngc-25-11.txt"


def cli(*args: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "sparkenv", *args],
        capture_output=True,
        text=True,
        timeout=300,
        cwd=cwd,
        env={**os.environ, "NO_COLOR": "1"},
    )


@pytest.fixture
def project(tmp_path: Path) -> Path:
    """A project with a copy of the shipped lock, its inputs and a pyproject.toml."""
    (tmp_path / "pyproject.toml").write_text('[project]\nname = "x"\nversion = "0"\n')
    (tmp_path / "lockfiles" / "inputs").mkdir(parents=True)
    for name in (PYLOCK, REQS, "inputs/playbook-unsloth.txt"):
        (tmp_path / "lockfiles" / name).write_bytes((SHIPPED / name).read_bytes())
    return tmp_path


def edit(path: Path, old: str, new: str) -> None:
    text = path.read_text()
    assert old in text, old
    path.write_text(text.replace(old, new, 1))


def one_line_exit_2(proc: subprocess.CompletedProcess[str], *words: str) -> None:
    assert proc.returncode == 2, proc.stdout + proc.stderr
    assert proc.stderr.count("\n") == 1 and "Traceback" not in proc.stderr, proc.stderr
    for word in words:
        assert word in proc.stderr, proc.stderr


def test_the_shipped_lock_reads_into_its_stages_and_renders_its_own_requirements_file():
    lock = read.sparkenv_lock(SHIPPED / PYLOCK)
    assert lock.profile == "ngc-25.11" and lock.platform == "linux/aarch64"
    assert [(s.name, s.no_deps) for s in lock.stages] == [("1-packages", False), ("2-unsloth", True)]
    assert {p.name for p in lock.stages[1].packages} == {"unsloth", "unsloth-zoo"}
    assert sum(len(s.packages) for s in lock.stages) == len(lock.packages)
    assert "torch" in lock.excluded and "torch" not in lock.pins
    text = (SHIPPED / REQS).read_text()
    header = [line.removeprefix("# ") for line in text.split("\n\n", 1)[0].splitlines()[1:]]
    assert write.render_requirements(lock, header) == text  # the one writer wrote it from the pylock


def test_build_takes_the_stages_from_the_pylock_not_the_comments(project: Path):
    reqs = project / "lockfiles" / REQS
    reqs.write_text("\n".join(ln for ln in reqs.read_text().splitlines() if not ln.startswith("# stage")))
    proc = cli("build", "--dry-run", "--lock", f"lockfiles/{REQS}", cwd=project)  # a requirements file works
    assert proc.returncode == 0, proc.stderr
    assert "lock/requirements.1-packages.txt" in proc.stdout
    assert "lock/requirements.2-unsloth.txt" in proc.stdout


def test_stage_tables_that_disagree_with_the_packages_are_exit_2_everywhere(project: Path):
    pylock = project / "lockfiles" / PYLOCK
    edit(pylock, 'stages = ["1-packages", "2-unsloth"]', 'stages = ["1-packages"]')
    edit(pylock, 'no-deps-stages = ["2-unsloth"]', "no-deps-stages = []")
    words = ("package unsloth is in stage 2-unsloth, which [tool.sparkenv] stages does not list", "re-lock")
    one_line_exit_2(cli("build", "--dry-run", "--lock", f"lockfiles/{PYLOCK}", cwd=project), PYLOCK, *words)
    one_line_exit_2(cli("audit", sys.prefix, "--lock", str(pylock), cwd=project), str(pylock), *words)


def test_a_no_deps_stage_the_stages_do_not_list_is_exit_2(project: Path):
    pylock = project / "lockfiles" / PYLOCK
    edit(pylock, 'no-deps-stages = ["2-unsloth"]', 'no-deps-stages = ["3-late"]')
    proc = cli("build", "--dry-run", "--lock", f"lockfiles/{PYLOCK}", cwd=project)
    one_line_exit_2(proc, "no-deps-stages names 3-late, which stages does not list")


def test_a_package_without_a_stage_and_a_stage_name_with_a_folder_are_exit_2(project: Path):
    pylock = project / "lockfiles" / PYLOCK
    original = pylock.read_text()
    edit(pylock, 'tool = { sparkenv = { stage = "2-unsloth" } }', "")
    proc = cli("build", "--dry-run", "--lock", f"lockfiles/{PYLOCK}", cwd=project)
    one_line_exit_2(proc, "has no [packages.tool.sparkenv] stage")
    pylock.write_text(original.replace('"1-packages"', '"../1-packages"'))
    proc = cli("build", "--dry-run", "--lock", f"lockfiles/{PYLOCK}", cwd=project)
    one_line_exit_2(proc, "'../1-packages' is not a stage name")


def test_a_hand_edited_requirements_file_disagrees_with_the_pylock(project: Path):
    reqs = project / "lockfiles" / REQS
    edit(reqs, "accelerate==1.15.0", "accelerate==1.14.0")
    proc = cli("build", "--dry-run", "--lock", f"lockfiles/{PYLOCK}", cwd=project)
    one_line_exit_2(proc, f"{REQS}: disagrees with", "pins accelerate==1.14.0", "locks 1.15.0", "re-lock")


def test_another_lock_format_is_re_lock_for_build_and_stale_for_lock_check(project: Path):
    pylock = project / "lockfiles" / PYLOCK
    edit(pylock, "format = 1\n", "format = 2\n")
    proc = cli("build", "--dry-run", "--lock", f"lockfiles/{PYLOCK}", cwd=project)
    one_line_exit_2(proc, "written by sparkenv lock format 2, this sparkenv reads format 1: re-lock")
    proc = cli("lock", "--check", "--output-dir", "lockfiles", cwd=project)
    assert proc.returncode == 1, proc.stderr
    assert "is stale: written by another sparkenv lock format" in proc.stdout
    edit(pylock, "format = 2\n", 'format = "1"\n')
    proc = cli("build", "--dry-run", "--lock", f"lockfiles/{PYLOCK}", cwd=project)
    one_line_exit_2(proc, "[tool.sparkenv] format must be an integer, got a string")

"""`sparkenv audit` finds what `pip check` finds (G9), on real environments: venvs made by uv and filled
by pip itself (`--no-deps`, the way broken environments are made), and the test suite's own venv.

pip check's two kinds of line are parsed; any other line pip check prints fails the test, so a new kind
of problem pip learns to report does not go unnoticed.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path

import artifacts
import pytest

_MISSING = re.compile(r"^(\S+) (\S+) requires (\S+), which is not installed\.$")
_CONFLICT = re.compile(r"^(\S+) (\S+) has requirement (.+), but you have (\S+) (\S+)\.$")


def canon(name: str) -> str:
    return re.sub(r"[-_.]+", "-", name).lower()


def pip_check(python: Path) -> set[tuple[str, str, str]]:
    """(requirer, required, "missing" | "conflict") from `python -m pip check`."""
    proc = subprocess.run([str(python), "-m", "pip", "check"], capture_output=True, text=True, timeout=300)
    found: set[tuple[str, str, str]] = set()
    for line in proc.stdout.splitlines():
        if m := _MISSING.match(line):
            found.add((canon(m.group(1)), canon(re.split(r"[\[<>=!~; @]", m.group(3))[0]), "missing"))
        elif m := _CONFLICT.match(line):
            found.add((canon(m.group(1)), canon(m.group(4)), "conflict"))
        else:
            assert line == "No broken requirements found.", f"a pip check line this test cannot read: {line}"
    assert (proc.returncode == 0) == (not found), proc.stdout
    return found


def audit(target: Path) -> tuple[dict, set[tuple[str, str, str]]]:
    proc = subprocess.run(
        [sys.executable, "-m", "sparkenv", "audit", str(target), "--json"],
        capture_output=True,
        text=True,
        timeout=300,
        env={k: v for k, v in os.environ.items() if k != "VIRTUAL_ENV"},
    )
    assert proc.returncode in (0, 1), proc.stderr
    report = json.loads(proc.stdout)
    found = {
        (d["distribution"], p["required"], "missing" if p["installed"] is None else "conflict")
        for d in report["context"]["broken_requirements"]
        for p in d["problems"]
    }
    return report, found


def venv(folder: Path) -> Path:
    import uv

    env = {k: v for k, v in os.environ.items() if k != "VIRTUAL_ENV"}
    subprocess.run(
        [str(uv.find_uv_bin()), "venv", "-q", "--seed", "--python", sys.executable, str(folder)],
        check=True,
        timeout=300,
        env=env,
    )
    return folder / "bin" / "python"


def pip_install(python: Path, *args: str) -> None:
    proc = subprocess.run(
        [str(python), "-m", "pip", "install", "-q", "--no-deps", "--disable-pip-version-check", *args],
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert proc.returncode == 0, proc.stderr[-2000:]


def test_local_wheels_markers_and_extras(tmp_path: Path) -> None:
    wheels = tmp_path / "wheels"
    wheels.mkdir()
    artifacts.write_wheel(
        wheels,
        "app",
        "1.0",
        extras=["docs"],
        requires=[
            "lib>=2",  # lib 1.5 is installed: a conflict
            "Lib_Two",  # not installed: missing (named as written, found by its normalized name)
            "winonly; sys_platform == 'win32'",  # not for this environment
            "py2only; python_version < '3'",
            "docsdep; extra == 'docs'",  # app's extra docs was not asked for
            "tool[fast]>=1",  # tool's extra fast was asked for: its requirements count
            "okdep>=1,<2",
        ],
    )
    artifacts.write_wheel(wheels, "lib", "1.5")
    artifacts.write_wheel(wheels, "okdep", "1.4rc1")  # a pre-release satisfies >=1,<2, as pip check says
    artifacts.write_wheel(wheels, "tool", "1.0", extras=["fast"], requires=["speedup>=1; extra == 'fast'"])
    python = venv(tmp_path / "venv")
    pip_install(python, "--no-index", "--find-links", str(wheels), "app", "lib", "okdep", "tool")

    expected_by_pip = {("app", "lib", "conflict"), ("app", "lib-two", "missing")}
    assert pip_check(python) == expected_by_pip
    report, found = audit(tmp_path / "venv")
    # everything pip check finds, plus the extra pip check ignores
    assert found == expected_by_pip | {("tool", "speedup", "missing")}
    lines = {(f["status"], f["summary"]) for f in report["findings"] if f["id"] == "G9"}
    assert ("WARN", "tool 1.0 (extra fast) requires speedup>=1, which is not installed") in lines
    # one line per problem (as uv pip check), names normalized (Lib_Two is lib-two, said one way)
    app = {f["subject"]: f for f in report["findings"] if f["id"] == "G9" and f["subject"].startswith("app:")}
    assert sorted(app) == ["app:lib", "app:lib-two"]
    assert app["app:lib"]["summary"] == "app 1.0 requires lib>=2, but lib 1.5 is installed"
    assert app["app:lib-two"]["summary"] == "app 1.0 requires lib-two, which is not installed"
    assert (
        "pip install 'lib>=2'" in app["app:lib"]["fix"]
        and "pip install 'lib-two'" in app["app:lib-two"]["fix"]
    )
    assert all(f["status"] == "WARN" for f in app.values())
    # the JSON groups them per distribution that requires them
    [group] = [d for d in report["context"]["broken_requirements"] if d["distribution"] == "app"]
    assert group["version"] == "1.0"
    assert [(p["required"], p["installed"]) for p in group["problems"]] == [("lib", "1.5"), ("lib-two", None)]
    assert report["verdict"] == "ready-with-warnings"

    # Fixed as the findings say: both tools agree there is nothing left.
    artifacts.write_wheel(wheels, "lib", "2.0")
    for name in ("lib-two", "speedup"):
        artifacts.write_wheel(wheels, name, "1.0")
    pip_install(python, "--no-index", "--find-links", str(wheels), "lib==2.0", "lib-two", "speedup")
    assert pip_check(python) == set()
    report, found = audit(tmp_path / "venv")
    assert found == set()
    assert any(
        f["status"] == "PASS"
        and f["subject"] == "requirements"
        and f["summary"].startswith("requirements met")
        for f in report["findings"]
    )


@pytest.mark.network
def test_real_pypi_packages_installed_without_their_dependencies(tmp_path: Path) -> None:
    python = venv(tmp_path / "venv")
    # rich 13.9.4 needs markdown-it-py>=2.2.0 and pygments; requests 2.32.3 its four dependencies
    pip_install(python, "rich==13.9.4", "markdown-it-py==2.1.0", "requests==2.32.3", "idna==3.10")
    by_pip = pip_check(python)
    assert ("rich", "markdown-it-py", "conflict") in by_pip and ("requests", "urllib3", "missing") in by_pip
    report, found = audit(tmp_path / "venv")
    assert found == by_pip
    rich = next(f for f in report["findings"] if f["id"] == "G9" and f["subject"] == "rich:markdown-it-py")
    assert rich["summary"] == (
        "rich 13.9.4 requires markdown-it-py>=2.2.0, but markdown-it-py 2.1.0 is installed"
    )


def test_the_test_suites_own_venv() -> None:
    prefix = Path(sys.prefix)
    _, found = audit(prefix)
    assert found == pip_check(prefix / "bin" / "python")

"""The SDPA override's .pth activation and CLI, in real venvs and real interpreters (no network).

Tests against the real Unsloth source are in tests/patches/test_patches_unsloth.py. Here a tiny package tree
(`unsloth` with `_utils` + a star-importing module, written to tmp) stands in for Unsloth where a test is
about the import machinery, not about Unsloth's layout: it says so where it is used.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from sparkenv.patches import install as inst

REPO = Path(__file__).resolve().parents[2]
PTH = "sparkenv-sdpa.pth"


def sparkenv(*args: str, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "sparkenv", *args], capture_output=True, text=True, timeout=120, env=env
    )


@pytest.fixture
def venv(tmp_path: Path) -> Path:
    path = tmp_path / "venv"
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(path)], check=True, timeout=60)
    return path


def site_of(venv: Path) -> Path:
    return next((venv / "lib").glob("python3*/site-packages"))


def py(venv: Path, code: str, **env: str) -> subprocess.CompletedProcess[str]:
    clean = {
        k: v for k, v in os.environ.items() if k not in ("SPARKENV_SDPA", "SPARKENV_DEBUG", "PYTHONPATH")
    }
    return subprocess.run(
        [str(venv / "bin" / "python"), "-c", code],
        capture_output=True,
        text=True,
        timeout=60,
        env={**clean, **env},
    )


HOOK = "import sys; print(any(getattr(f, '_sparkenv_sdpa', None) for f in sys.meta_path))"


def test_install_verify_status_uninstall(venv: Path) -> None:
    r = sparkenv("patch", "sdpa", "--install", str(venv))
    assert r.returncode == 0, r.stderr
    assert r.stdout.startswith("G2 PASS: SDPA override installed in ") and "loads the hook" in r.stdout
    site = site_of(venv)
    assert (site / PTH).is_file() and (site / "_sparkenv_sdpa.py").is_file()
    assert py(venv, HOOK).stdout.strip() == "True"
    r = sparkenv("patch", "sdpa", str(venv), "--json")
    assert json.loads(r.stdout)["findings"][0]["status"] == "PASS"
    r = sparkenv("patch", "sdpa", "--uninstall", str(venv))
    assert r.returncode == 0 and r.stdout.startswith("G2 INFO: SDPA override removed from ")
    left = [p for p in site.rglob("*") if "sparkenv" in p.name]
    assert left == []
    assert py(venv, HOOK).stdout.strip() == "False"
    r = sparkenv("patch", "sdpa", "--uninstall", str(venv))
    assert "nothing to remove" in r.stdout
    r = sparkenv("patch", "sdpa", str(venv))
    assert r.stdout.startswith("G2 INFO: SDPA override not installed")


def test_audit_sees_the_installed_override(venv: Path) -> None:
    """sparkenv audit's G2 check looks for the same file name in the site folder."""
    sparkenv("patch", "sdpa", "--install", str(venv))
    from sparkenv.core import datafiles
    from sparkenv.environment import target

    assert datafiles.load("packages")["sdpa_override_pth"] == PTH

    t = target.resolve(str(venv))
    assert any((d / PTH).is_file() for d in t.site_dirs)


def test_switched_off_at_run_time(venv: Path) -> None:
    sparkenv("patch", "sdpa", "--install", str(venv))
    for value in ("0", "off", "false", "no"):
        assert py(venv, HOOK, SPARKENV_SDPA=value).stdout.strip() == "False"
    code = (
        "import _sparkenv_sdpa as s\nst = s.status()\n"
        "print(st['installed'], st['disabled_by_env'], st['message'])"
    )
    out = py(venv, code, SPARKENV_SDPA="0").stdout
    assert out.startswith("True True SDPA override off: SPARKENV_SDPA=0")
    assert py(
        venv, "import _sparkenv_sdpa as s; print(s._finder().mode)", SPARKENV_SDPA="xformers"
    ).stdout == ("xformers\n")


def test_pth_never_breaks_start_up(venv: Path) -> None:
    """Faults caused for real: a broken copy of the hook module, then a missing one."""
    sparkenv("patch", "sdpa", "--install", str(venv))
    site = site_of(venv)
    (site / "_sparkenv_sdpa.py").write_text("raise RuntimeError('boom')\n")
    r = py(venv, "print('started')")
    assert (r.returncode, r.stdout, r.stderr) == (0, "started\n", "")
    r = py(venv, "print('started')", SPARKENV_DEBUG="1")
    assert r.returncode == 0 and r.stdout == "started\n"
    # once per site folder that holds the .pth (a venv's lib64 -> lib link makes site.py read it twice)
    lines = r.stderr.splitlines()
    assert lines and set(lines) == {f"{PTH}: SDPA override not loaded: RuntimeError('boom')"}
    (site / "_sparkenv_sdpa.py").unlink()
    r = py(venv, "print('started')")
    assert (r.returncode, r.stdout, r.stderr) == (0, "started\n", "")
    r = sparkenv("patch", "sdpa", str(venv))
    assert r.returncode == 1 and r.stdout.startswith("G2 FAIL: ") and "missing" in r.stdout
    (site / "_sparkenv_sdpa.py").write_text("# an older copy\n")
    r = sparkenv("patch", "sdpa", str(venv))
    assert r.stdout.startswith("G2 WARN: SDPA override installed") and "another sparkenv version" in r.stdout


def test_pth_is_lazy(venv: Path) -> None:
    """No module beyond the hook's own is imported at start-up (its cost is measured in benchmarks/)."""
    code = "import sys; print(' '.join(sorted(sys.modules)))"
    before = set(py(venv, code).stdout.split())
    sparkenv("patch", "sdpa", "--install", str(venv))
    after = set(py(venv, code).stdout.split())
    assert after - before <= {"_sparkenv_sdpa", "__future__"}  # __future__: its annotations import


# A stand-in package tree (not Unsloth's layout: that is tested on the real source): `_utils` computes the
# flags like Unsloth's, `dispatch` star-imports them, as attention_dispatch does.
FIXTURE = {
    "unsloth/__init__.py": "from .dispatch import select\n",
    "unsloth/_utils.py": "__all__ = ['HAS_FLASH_ATTENTION', 'HAS_XFORMERS']\nHAS_FLASH_ATTENTION = True\n"
    "HAS_XFORMERS = True\n",
    "unsloth/dispatch.py": "from ._utils import *\n\ndef select():\n"
    "    return 'flash' if HAS_FLASH_ATTENTION else 'xformers' if HAS_XFORMERS else 'sdpa'\n",
}


@pytest.mark.parametrize("order", ["before", "after"])
def test_import_order_does_not_matter(tmp_path: Path, order: str) -> None:
    for rel, text in FIXTURE.items():
        (tmp_path / rel).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / rel).write_text(text)
    code = (
        f"import sys; sys.path.insert(0, {str(tmp_path)!r}); sys.path.insert(0, {str(REPO)!r})\n"
        "from sparkenv.patches import force_sdpa, status, restore\n"
        + (
            "r = force_sdpa(); import unsloth\n"
            if order == "before"
            else "import unsloth; r = force_sdpa()\n"
        )
        + "import json; s = status(); print(json.dumps([unsloth.select(), r['message'], s['active'], "
        "s['changes'], restore(), unsloth.select()]))\n"
    )
    r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60)
    assert r.returncode == 0, r.stderr
    select, message, active, changes, restored, after_restore = json.loads(r.stdout)
    assert select == "sdpa" and active
    assert "unsloth.dispatch.HAS_FLASH_ATTENTION: True -> False" in changes or order == "before"
    assert "unsloth._utils.HAS_FLASH_ATTENTION: True -> False" in changes
    assert message.startswith("SDPA override active")
    assert restored == len(changes)
    # restore() puts back what it changed; a copy made while the override was on stays as it was copied
    assert after_restore == ("flash" if order == "after" else "sdpa")


def test_no_op_without_unsloth() -> None:
    code = (
        "import sys; from sparkenv.patches import force_sdpa, status; r = force_sdpa(); "
        "print(r['message']); print(any(getattr(f, '_sparkenv_sdpa', None) for f in sys.meta_path))"
    )
    r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60, cwd="/")
    assert r.stdout == "Unsloth is not installed: nothing to patch (transformers left as it is)\nFalse\n"


def test_status_imports_nothing_heavy() -> None:
    code = (
        "import sys, json; from sparkenv.patches import sdpa; s = sdpa.status(); "
        "print(json.dumps([s['active'], sorted(m for m in ('torch', 'transformers', 'unsloth', 'typer') "
        "if m in sys.modules)]))"
    )
    r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60)
    assert json.loads(r.stdout) == [False, []]


def test_bad_input_is_one_line_exit_2(tmp_path: Path) -> None:
    r = sparkenv("patch", "sdpa", "--install", "--uninstall", str(tmp_path))
    assert (r.returncode, r.stderr) == (2, "sparkenv: error: --install and --uninstall exclude each other\n")
    r = sparkenv("patch", "sdpa", "--install", str(tmp_path / "nope"))
    assert r.returncode == 2 and len(r.stderr.splitlines()) == 1 and "no such file" in r.stderr


def test_unwritable_site_is_exit_2(venv: Path) -> None:
    if os.geteuid() == 0:
        pytest.skip("root writes anywhere: the permission fault cannot be caused for real")
    site = site_of(venv)
    site.chmod(0o555)
    try:
        r = sparkenv("patch", "sdpa", "--install", str(venv))
    finally:
        site.chmod(0o755)
    assert r.returncode == 2 and "cannot write" in r.stderr


def test_pth_line_is_one_import_line() -> None:
    line = inst.pth_line()
    assert line.startswith("import ") and line.count("\n") == 1


def test_a_failing_install_leaves_neither_file(venv: Path) -> None:
    """Issue 11 item 9: a partial install left the module behind. A folder where the .pth goes makes the
    second file unwritable for real (root included); neither file may be left."""
    site = site_of(venv)
    (site / inst.pth_name()).mkdir()
    r = sparkenv("patch", "sdpa", "--install", str(venv))
    assert r.returncode == 2 and len(r.stderr.splitlines()) == 1 and "is a directory" in r.stderr, r.stderr
    assert not (site / f"{inst.hook_module()}.py").exists()
    assert [p.name for p in site.iterdir() if p.name.endswith(".tmp")] == []

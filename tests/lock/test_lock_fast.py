"""`sparkenv lock` without typer (sparkenv/resolve/lock_args.py), and uv started before the lock's own
judgement: the same options and words as the typer command; nothing loaded before uv starts that uv's
command does not need; a declared FAIL found while uv resolves ends the lock as before, uv killed, its
work folder gone, nothing written. Real uv, a real loopback index (one that never answers, so that uv is
certainly still running when the FAIL is found)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from artifacts import Index, serve
from test_lock_signals import _alive, silent_index  # noqa: F401 - the fixture

# the lean entry and the typer command, both with argv[0] "sparkenv" (the usage line names it)
LEAN = "import sys; sys.argv[0] = 'sparkenv'; from sparkenv.cli.entry import main; main()"
TYPED = "import sys; sys.argv[0] = 'sparkenv'; from sparkenv.cli.commands import main; main()"


def _typer_lock():  # type: ignore[no-untyped-def]
    import typer.main

    from sparkenv.cli.commands import app

    return next(c for c in typer.main.get_command(app).commands.values() if c.name == "lock")


def _python(code: str, *args: str, env: dict[str, str] | None = None, cwd: Path | None = None):  # type: ignore[no-untyped-def]
    full = {k: v for k, v in os.environ.items() if k not in ("VIRTUAL_ENV", "NVIDIA_PYTORCH_VERSION")}
    full.update({"COLUMNS": "120", **(env or {})})
    return subprocess.run(
        [sys.executable, "-c", code, *args], capture_output=True, text=True, timeout=120, env=full, cwd=cwd
    )


def test_the_lean_parser_knows_every_option_the_typer_command_declares():
    from sparkenv.core.optionspec import spellings
    from sparkenv.resolve import lock_args

    declared = {o for p in _typer_lock().params for o in p.opts if o.startswith("-")}
    assert declared - {"-h", "--help"} == set(spellings(lock_args.OPTIONS))


@pytest.mark.parametrize(
    "argv",
    [
        ["lock", "--help"],
        ["lock", "-h"],
        ["lock", "req.txt", "--bogus"],
        ["lock", "--check", "--profil", "x"],
        ["lock", "req.txt", "--profile"],
        ["lock", "req.txt", "--timeout", "abc"],
        ["lock", "req.txt", "--timeout", "0"],
        ["lock", "req.txt", "--timeout=nan"],
        ["lock", "req.txt", "--select", "G99"],
        ["lock"],
    ],
)
def test_help_and_errors_are_the_typer_commands_words(tmp_path, argv):
    lean = _python(LEAN, *argv, cwd=tmp_path)
    typed = _python(TYPED, *argv, cwd=tmp_path)
    assert (lean.returncode, lean.stdout, lean.stderr) == (typed.returncode, typed.stdout, typed.stderr)
    assert lean.returncode == (0 if {"--help", "-h"} & set(argv) else 2), lean.stderr
    assert "Traceback" not in lean.stderr


@pytest.fixture(scope="module")
def solo(tmp_path_factory: pytest.TempPathFactory):
    ix = Index(tmp_path_factory.mktemp("solo-index"))
    ix.wheel("solo", "1.0")
    server = serve(ix)
    yield ix
    server.shutdown()


def test_output_that_cannot_be_written_is_one_line_and_exit_3(solo, tmp_path):
    """The lock's process ends without the interpreter's teardown (process_exit.leave): its last output
    is still flushed there, and a stdout that cannot take it is said as at any other exit."""
    req = tmp_path / "requirements.txt"
    req.write_text("solo\n")
    env = {"UV_CACHE_DIR": str(tmp_path / "uv"), "SPARKENV_CACHE_DIR": str(tmp_path / "sp")}
    args = ("lock", str(req), "--index-url", solo.url, "--output-dir", str(tmp_path / "out"))
    with open("/dev/full", "w") as full:
        proc = subprocess.run(
            [sys.executable, "-c", LEAN, *args], stdout=full, stderr=subprocess.PIPE, text=True,
            timeout=120, env={**os.environ, **env}, cwd=tmp_path,
        )  # fmt: skip
    assert proc.returncode == 3
    assert proc.stderr == "sparkenv: error: stdout cannot be written: No space left on device\n"
    ok = _python(LEAN, *args, env=env, cwd=tmp_path)
    assert ok.returncode == 0 and ok.stdout.endswith("verdict: ready\n"), ok.stderr


def test_uv_starts_before_what_only_judges_its_answer(solo, tmp_path):
    """At the moment uv is spawned, the lock has loaded neither typer nor the renderer, the declared
    rules, nor what judges the resolved set; and none of typer, click or pydantic by the end."""
    ix = solo
    req = tmp_path / "requirements.txt"
    req.write_text("solo\n")
    code = (
        "import atexit, sys\n"
        "import sparkenv.core.children as c\n"
        "spawn = c.spawn\n"
        "def spy(*a, **k):\n"
        "    print('AT_SPAWN', *sorted(sys.modules), file=sys.stderr)\n"
        "    return spawn(*a, **k)\n"
        "c.spawn = spy\n"
        "atexit.register(lambda: print('AT_EXIT', *sorted(sys.modules), file=sys.stderr))\n"
        "sys.argv[0] = 'sparkenv'\n"
        "from sparkenv.cli.entry import main; main()\n"
    )
    env = {"UV_CACHE_DIR": str(tmp_path / "uv"), "SPARKENV_CACHE_DIR": str(tmp_path / "sp")}
    args = ("lock", str(req), "--index-url", ix.url, "--output-dir", str(tmp_path / "out"), "-q")
    proc = _python(code, *args, env=env, cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr[-2000:]
    assert "solo==1.0" in (tmp_path / "out" / "requirements.ngc-25-11.txt").read_text()

    def modules(tag: str) -> set[str]:
        return set(next(ln for ln in proc.stderr.splitlines() if ln.startswith(tag)).split()[1:])

    at_spawn, at_exit = modules("AT_SPAWN"), modules("AT_EXIT")
    later = {
        "typer", "click", "pydantic", "pip_requirements_parser", "sparkenv.render.emit",
        "sparkenv.rules.g1_declared", "sparkenv.rules.g9_declared", "sparkenv.lock.resolved",
        "sparkenv.index.metadata", "sparkenv.facts.resolved", "sparkenv.facts.graph",
        "sparkenv.lock.early", "urllib.request",
    }  # fmt: skip
    assert not at_spawn & later
    assert {"sparkenv.rules.g1_declared", "sparkenv.lock.resolved", "sparkenv.render.emit"} <= at_exit
    assert not at_exit & {"typer", "click", "pydantic"}


def test_a_declared_fail_found_while_uv_resolves_stops_uv_and_writes_nothing(silent_index, tmp_path):  # noqa: F811
    """uv waits on an index that never answers; the declared FAIL (a CUDA 12 package) ends the lock at
    once with the declared findings and the lock withheld, exit 1, as when the FAIL was found before uv
    started: uv's group killed, the work folder removed, no file written."""
    req = tmp_path / "requirements.txt"
    req.write_text("cupy-cuda12x\npeft\n")
    tmp = tmp_path / "tmp"
    tmp.mkdir()
    pid_file = tmp_path / "uv.pid"
    code = (
        "import sys\n"
        "import sparkenv.core.children as c\n"
        "spawn = c.spawn\n"
        "def spy(*a, **k):\n"
        "    p = spawn(*a, **k)\n"
        f"    open({str(pid_file)!r}, 'w').write(str(p.pid))\n"
        "    return p\n"
        "c.spawn = spy\n"
        "sys.argv[0] = 'sparkenv'\n"
        "from sparkenv.cli.entry import main; main()\n"
    )
    env = {"TMPDIR": str(tmp), "UV_CACHE_DIR": str(tmp_path / "uv"), "UV_HTTP_TIMEOUT": "120"}
    out = tmp_path / "out"
    # --timeout 10: the fix tried after the declared FAIL (resolve/fixes.py) waits on the same silent
    # index until the lock's deadline, then is stopped and cleaned up like the first uv
    args = ["lock", str(req), "--index-url", silent_index, "--output-dir", str(out), "--timeout", "10"]
    proc = _python(code, *args, "--json", env=env, cwd=tmp_path)
    assert proc.returncode == 1, proc.stderr
    assert pid_file.is_file(), "uv was not started before the declared judgement"
    assert not _alive(int(pid_file.read_text()))
    assert not list(tmp.iterdir()) and not out.exists()
    report = json.loads(proc.stdout)
    failed = [f for f in report["findings"] if f["status"] == "FAIL"]
    assert [f["subject"] for f in failed if f["id"] == "G1"] == ["cupy-cuda12x"]
    assert report["verdict"] != "ready"
    # the FAIL `check` finds in the declared requirements (the same judgement), and the lock withheld
    check = json.loads(_python(LEAN, "check", str(req), "--json", cwd=tmp_path).stdout)

    def judged(f: dict) -> dict:  # the fix lock prints was tried; check's cannot be (offline)
        return {k: v for k, v in f.items() if k != "fix"}

    assert [judged(f) for f in check["findings"] if f["status"] == "FAIL"] == [judged(f) for f in failed]
    assert "the re-resolve stopped" in failed[0]["fix"] or "not tried" in failed[0]["fix"]
    assert any(f["id"] == "G9" and "no lock written" in f["summary"] for f in report["findings"])

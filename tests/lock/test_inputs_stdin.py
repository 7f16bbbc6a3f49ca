"""`-r FILE` and `-` (standard input) for `check` and `lock`, as pip users type them: `sparkenv check -r
requirements.txt`, `cat requirements.txt | sparkenv check -`. Standard input is read once and bounded,
named "<stdin>" in every message, stands in the current folder (its includes are relative to it, fenced
by that folder's project); `lock` refuses it, since a lock names files that `lock --check` reads again."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

REQ = "torch==2.9.0\nnvidia-cuda-runtime-cu12\n"


def cli(*args: str, cwd: Path, stdin: bytes | int | None = None) -> subprocess.CompletedProcess[str]:
    """The real CLI in its own process; `stdin`: bytes piped in, or a file descriptor."""
    env = {k: v for k, v in os.environ.items() if k not in ("VIRTUAL_ENV", "NVIDIA_PYTORCH_VERSION")}
    piped = isinstance(stdin, bytes)
    proc = subprocess.run(
        [sys.executable, "-m", "sparkenv", *args],
        input=stdin if piped else None,
        stdin=None if piped else (stdin if stdin is not None else subprocess.DEVNULL),
        capture_output=True,
        timeout=120,
        env=env,
        cwd=cwd,
    )
    return subprocess.CompletedProcess(
        proc.args, proc.returncode, proc.stdout.decode(errors="replace"), proc.stderr.decode(errors="replace")
    )


def _findings(out: str) -> list[str]:
    return [ln for ln in out.splitlines() if ln[:1] == "G"]


def test_dash_r_reads_the_file_as_an_input_does(tmp_path):
    (tmp_path / "requirements.txt").write_text(REQ, encoding="utf-8")
    given = cli("check", "requirements.txt", cwd=tmp_path)
    flagged = cli("check", "-r", "requirements.txt", cwd=tmp_path)
    assert given.returncode == flagged.returncode == 1, flagged.stderr
    assert _findings(flagged.stdout) == _findings(given.stdout)
    assert "G1 FAIL: nvidia-cuda-runtime-cu12 (requirements.txt:2)" in flagged.stdout


def test_stdin_is_judged_and_named_stdin(tmp_path):
    (tmp_path / "requirements.txt").write_text(REQ, encoding="utf-8")
    piped = cli("check", "-", cwd=tmp_path, stdin=REQ.encode())
    assert piped.returncode == 1, piped.stderr
    assert "G1 FAIL: nvidia-cuda-runtime-cu12 (<stdin>:2)" in piped.stdout
    assert "G9 FAIL: torch==2.9.0 (<stdin>:1)" in piped.stdout
    by_file = cli("check", "requirements.txt", cwd=tmp_path)
    assert [ln.replace("requirements.txt", "<stdin>") for ln in _findings(by_file.stdout)] == _findings(
        piped.stdout
    )
    report = json.loads(cli("check", "-", "--json", cwd=tmp_path, stdin=REQ.encode()).stdout)
    assert report["target"] == "<stdin>"


def test_stdin_includes_are_relative_to_the_current_folder_and_fenced_by_its_project(tmp_path):
    repo = tmp_path / "repo"
    (repo / ".git").mkdir(parents=True)  # the project: the git top-level
    (repo / "shared").mkdir()
    (repo / "shared" / "cuda.txt").write_text("cupy-cuda12x\n", encoding="utf-8")
    here = repo / "service"
    here.mkdir()
    (tmp_path / "outside.txt").write_text("requests\n", encoding="utf-8")

    inside = cli("check", "-", cwd=here, stdin=b"-r ../shared/cuda.txt\nrequests\n")
    assert inside.returncode == 1, inside.stderr
    assert "G1 FAIL: cupy-cuda12x (../shared/cuda.txt:1)" in inside.stdout

    outside = cli("check", "-", cwd=here, stdin=b"-r ../../outside.txt\n")
    assert outside.returncode == 2 and outside.stdout == ""
    assert outside.stderr.startswith("sparkenv: error: <stdin>:1: '../../outside.txt' points outside")
    assert len(outside.stderr.splitlines()) == 1 and "Traceback" not in outside.stderr


@pytest.mark.parametrize(
    ("data", "why"),
    [
        (b"x" * ((16 << 20) + 1), "<stdin>: over the 16.0 MiB limit for a requirements file"),
        (b"requests\n\xff\xfe\n", "<stdin>: not UTF-8 text (byte 0xff on line 2)"),
    ],
    ids=["too-big", "not-utf8"],
)
def test_bad_stdin_is_one_line_naming_stdin(tmp_path, data, why):
    r = cli("check", "-", cwd=tmp_path, stdin=data)
    assert r.returncode == 2 and r.stdout == ""
    assert r.stderr.startswith(f"sparkenv: error: {why}") and len(r.stderr.splitlines()) == 1, r.stderr


def test_a_terminal_on_stdin_is_refused_not_waited_on(tmp_path):
    main, tty = os.openpty()  # a real terminal: `sparkenv check -` typed without a pipe
    try:
        r = cli("check", "-", cwd=tmp_path, stdin=tty)
    finally:
        os.close(main)
        os.close(tty)
    assert r.returncode == 2 and r.stderr.startswith("sparkenv: error: <stdin>: a terminal"), r.stderr


def test_stdin_read_once(tmp_path):
    r = cli("check", "-", "-", cwd=tmp_path, stdin=REQ.encode())
    assert r.returncode == 2 and "given twice" in r.stderr and len(r.stderr.splitlines()) == 1


@pytest.mark.parametrize("check_only", [False, True], ids=["lock", "lock --check"])
def test_lock_refuses_stdin_in_one_line_and_writes_nothing(tmp_path, check_only):
    argv = ["lock", "-", *(["--check"] if check_only else []), "--output-dir", "locks"]
    r = cli(*argv, cwd=tmp_path, stdin=REQ.encode())
    assert r.returncode == 2 and r.stdout == "", r.stderr
    assert "standard input" in r.stderr and "lock --check" in r.stderr and len(r.stderr.splitlines()) == 1
    assert not (tmp_path / "locks").exists()


def test_lock_check_reads_dash_r_as_an_input(tmp_path):
    """No lock yet: `lock --check -r FILE` and `lock --check FILE` say the same (offline, no resolver)."""
    (tmp_path / "requirements.txt").write_text("requests\n", encoding="utf-8")
    flagged = cli("lock", "--check", "-r", "requirements.txt", "--output-dir", "locks", cwd=tmp_path)
    given = cli("lock", "--check", "requirements.txt", "--output-dir", "locks", cwd=tmp_path)
    assert flagged.returncode == given.returncode == 1, flagged.stderr
    assert flagged.stdout == given.stdout and "requirements.txt" in flagged.stdout


def test_help_teaches_both(tmp_path):
    for command in ("check", "lock"):
        r = cli(command, "--help", cwd=tmp_path)
        assert r.returncode == 0
        text = " ".join(r.stdout.split())
        assert "-r FILE" in text, text
        assert "standard input" in text


def test_both_parsers_read_dash_r_and_dash_alike():
    import typer.main

    from sparkenv.cli.commands import app
    from sparkenv.core import optionspec
    from sparkenv.render import options as reporting
    from sparkenv.resolve import check_args

    argv = ["-r", "a.txt", "b.txt", "-", "-r", "c.txt"]
    command = next(c for c in typer.main.get_command(app).commands.values() if c.name == "check")
    params = command.make_context("check", list(argv)).params
    typed = check_args.CheckArgs.of(
        params["inputs"], optionspec.values(check_args.CHECK, params), reporting.bundle(params)
    )
    fast = check_args.parse(argv)
    assert fast == typed and fast is not None
    assert fast.inputs == ["a.txt", "c.txt", "b.txt", "-"]

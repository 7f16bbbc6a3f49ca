"""`sparkenv check` without typer (sparkenv/resolve/check_args.py): the same options, the same answers
as the typer command, and none of the imports check does not use."""

from __future__ import annotations

import os
import subprocess
import sys

import pytest


def _typer_check():  # type: ignore[no-untyped-def]
    import typer.main

    from sparkenv.cli.commands import app

    return next(c for c in typer.main.get_command(app).commands.values() if c.name == "check")


def test_the_fast_path_knows_every_option_the_typer_command_declares():
    from sparkenv.core.optionspec import spellings
    from sparkenv.resolve import check_args

    declared = {o for p in _typer_check().params for o in p.opts if o.startswith("-")}
    assert declared - {"-h", "--help"} == set(spellings(check_args.OPTIONS))


@pytest.mark.parametrize(
    "argv",
    [
        ["req.txt"],
        ["a.txt", "--profile", "ngc-26.01", "b.txt", "--platform=linux/amd64", "--lock-input"],
        [
            *("--json", "--report", "r.json", "--junit", "j.xml", "--sarif", "s.sarif", "--strict", "-q"),
            *("--select", "G1,G2", "--select", "G9", "--ignore", "G4", "--format", "json"),
            *("--waive", "G9:torch", "--waive", "G1:*", "--waivers", "w.toml", "--extra", "x", "--extra=y"),
            *("--", "--odd-name.txt"),
        ],
    ],
)
def test_the_fast_path_reads_what_the_typer_command_reads(argv):
    from sparkenv.cli import options as cli_options
    from sparkenv.resolve import check_args

    params = _typer_check().make_context("check", list(argv)).params
    shared = {p.name for p in cli_options.PARAMETERS}
    fast = check_args.parse(list(argv))
    assert fast is not None
    assert fast.reporting == cli_options.bundle({k: v for k, v in params.items() if k in shared})
    assert fast.inputs == params["inputs"]
    assert (fast.profile, fast.platform, fast.lock_input) == (
        params["profile"],
        params["platform"],
        params["lock_input"],
    )
    assert (fast.extra or None) == (params["extra"] or None)


@pytest.mark.parametrize(
    "argv", [[], ["--help"], ["-h"], ["req.txt", "--profil", "x"], ["req.txt", "--profile"]]
)
def test_help_typos_and_missing_values_go_to_typer(run, tmp_path, argv):
    from sparkenv.resolve import check_args

    assert check_args.parse(argv) is None
    r = run("check", *argv, cwd=tmp_path)
    if "--help" in argv or "-h" in argv:
        assert r.code == 0 and "--lock-input" in r.out
    elif not argv:  # no INPUT and no -r FILE
        assert r.code == 2 and r.err.startswith("sparkenv: error: sparkenv check: name the inputs")
    else:
        assert r.code == 2 and ("Usage" in r.err or "Error" in r.err)


def test_both_paths_print_the_same_report(run, tmp_path):
    """The fast path and the typer command (reached through `python -m sparkenv.cli.commands`) agree, byte for
    byte, on the text and on the exit code."""
    req = tmp_path / "requirements.txt"
    req.write_text("cupy-cuda12x\nunsloth\ntorch>=2.8\n", encoding="utf-8")
    fast = run("check", str(req), "--select", "G1")
    env = {k: v for k, v in os.environ.items() if k not in ("VIRTUAL_ENV", "NVIDIA_PYTORCH_VERSION")}
    code = "import sys; from sparkenv.cli.commands import main; sys.argv[0] = 'sparkenv'; main()"
    typed = subprocess.run(
        [sys.executable, "-c", code, "check", str(req), "--select", "G1"],
        capture_output=True,
        text=True,
        timeout=120,
        env=env,
    )
    assert fast.code == typed.returncode == 1
    assert fast.out == typed.stdout and "G1 FAIL: cupy-cuda12x" in fast.out
    missing = run("check", str(tmp_path / "nope.txt"))
    assert missing.code == 2 and missing.err.startswith("sparkenv: error:") and "nope.txt" in missing.err


def test_check_imports_only_what_it_uses(tmp_path):
    req = tmp_path / "requirements.txt"
    req.write_text("transformers==4.57.1\ntorch>=2.8\n", encoding="utf-8")
    code = (
        "import atexit, sys; "
        "atexit.register(lambda: print('MODULES', *sorted(sys.modules), file=sys.stderr)); "
        f"sys.argv = ['sparkenv', 'check', {str(req)!r}, '-q']; from sparkenv.cli.entry import main; main()"
    )
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60)
    line = next(ln for ln in proc.stderr.splitlines() if ln.startswith("MODULES "))
    imported = set(line.split()[1:])
    assert "sparkenv.rules.g9" in imported and proc.returncode == 0, proc.stderr[-500:]
    unused = {
        "typer",
        "click",
        "pydantic",
        "pip_requirements_parser",
        "sparkenv.rules.g7",
        "sparkenv.rules.g10",
        # other stages' rules of the gotchas check has rules for (rules.Lazy), and the lock's facts
        "sparkenv.rules.g1_installed",
        "sparkenv.rules.g1_live",
        "sparkenv.rules.g1_wheels",
        "sparkenv.rules.g9_installed",
        "sparkenv.rules.g9_live",
        "sparkenv.rules.g9_resolved",
        "sparkenv.facts.resolved",
        "importlib.resources",
        "hashlib",
    }
    # what the interpreter imports before sparkenv runs (site, .pth files of the machine: one that imports
    # certifi brings importlib.resources) is not check's doing
    start = subprocess.run(
        [sys.executable, "-c", "import sys; print(*sorted(sys.modules))"],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert start.returncode == 0, start.stderr
    by_check = imported - set(start.stdout.split())
    assert not by_check & unused, sorted(by_check & unused)


def test_the_audit_fast_path_matches_the_typer_command():
    import typer.main

    from sparkenv.audit import audit_args
    from sparkenv.cli import options as cli_options
    from sparkenv.cli.commands import app
    from sparkenv.core.optionspec import spellings

    command = next(c for c in typer.main.get_command(app).commands.values() if c.name == "audit")
    declared = {o for p in command.params for o in p.opts if o.startswith("-")}
    assert declared - {"-h", "--help"} == set(spellings(audit_args.OPTIONS))
    argv = ["venv", "--lock", "l.toml", "--gpu=9.0", "--root", "/mnt", "--machine", "aarch64", "-q", "--json"]
    params = command.make_context("audit", list(argv)).params
    fast = audit_args.parse(argv)
    assert fast is not None
    shared = {p.name for p in cli_options.PARAMETERS}
    assert fast.reporting == cli_options.bundle({k: v for k, v in params.items() if k in shared})
    assert (fast.target, fast.lock, fast.gpu, fast.root, fast.machine) == (
        params["target"],
        params["lock"],
        params["gpu"],
        params["root"],
        params["machine"],
    )
    assert audit_args.parse(["a", "b"]) is None and audit_args.parse(["--help"]) is None

"""Terminal manners: usage lines a person can read, help that uses the terminal's width."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

COMMANDS = ["check", "lock", "audit", "build", "explain", "profiles new", "patch sdpa", "profiles"]


def helptext(command: str, columns: int) -> str:
    proc = subprocess.run(
        [str(Path(sys.executable).with_name("sparkenv")), *command.split(), "--help"],
        capture_output=True,
        text=True,
        timeout=60,
        env={**os.environ, "COLUMNS": str(columns)},
    )
    assert proc.returncode == 0, proc.stderr
    return proc.stdout


@pytest.mark.parametrize("command", COMMANDS)
def test_usage_lines_read_the_posix_way(command: str) -> None:
    usage = helptext(command, 100).splitlines()[0]
    assert usage.startswith(f"Usage: sparkenv {command} [OPTIONS]")
    assert "{" not in usage and "[[" not in usage and "]...]" not in usage


def test_usage_examples() -> None:
    assert helptext("check", 100).splitlines()[0] == "Usage: sparkenv check [OPTIONS] [INPUT]..."
    assert helptext("lock", 100).splitlines()[0] == "Usage: sparkenv lock [OPTIONS] [INPUT]..."
    assert helptext("audit", 100).splitlines()[0] == "Usage: sparkenv audit [OPTIONS] [TARGET]"


def test_help_uses_the_terminal_width() -> None:
    wide = helptext("check", 150)
    narrow = helptext("check", 70)
    assert max(len(line) for line in wide.splitlines()) > 100
    assert max(len(line) for line in narrow.splitlines()) <= 70
    assert len(wide.splitlines()) < len(narrow.splitlines())

"""`sparkenv --color auto|always|never`: always paints the status words where no terminal is (a pipe),
never leaves them plain even under FORCE_COLOR, auto keeps NO_COLOR/FORCE_COLOR/terminal; anything else is
a usage error (exit 2). Real CLI processes on a real requirements file."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

RED_FAIL = "G1 \033[1;31mFAIL\033[0m: cupy-cuda12x"


def _check(tmp_path: Path, *before: str, env: dict[str, str]) -> subprocess.CompletedProcess[str]:
    (tmp_path / "r.txt").write_text("cupy-cuda12x\n")
    base = {k: v for k, v in os.environ.items() if k not in ("NO_COLOR", "FORCE_COLOR")}
    return subprocess.run(
        [sys.executable, "-m", "sparkenv", *before, "check", "r.txt"],
        cwd=tmp_path,
        env={**base, **env},
        capture_output=True,
        text=True,
        timeout=120,
    )


@pytest.mark.parametrize(
    ("option", "env", "painted"),
    [
        (("--color", "always"), {}, True),
        (("--color", "always"), {"NO_COLOR": "1"}, True),
        (("--color", "never"), {"FORCE_COLOR": "1"}, False),
        (("--color", "auto"), {"FORCE_COLOR": "1"}, True),
        (("--color", "auto"), {}, False),  # a pipe
        ((), {}, False),
    ],
)
def test_color_decides_before_the_environment(tmp_path: Path, option, env, painted) -> None:  # type: ignore[no-untyped-def]
    r = _check(tmp_path, *option, env=env)
    assert r.returncode == 1, r.stderr
    assert (RED_FAIL in r.stdout) is painted, r.stdout
    assert ("\033[" in r.stdout) is painted


def test_another_value_is_a_usage_error(tmp_path: Path) -> None:
    r = _check(tmp_path, "--color", "sometimes", env={})
    assert r.returncode == 2 and "'sometimes' is not one of auto, always, never" in r.stderr, r.stderr

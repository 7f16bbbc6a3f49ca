"""Which uv a lock runs when the `uv` package is not importable as itself."""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]


@pytest.mark.skipif(shutil.which("uv") is None, reason="needs a uv program on PATH")
def test_a_folder_named_uv_is_not_taken_for_the_uv_package(tmp_path: Path) -> None:
    """`python -m sparkenv lock` puts the working folder first on sys.path; a project folder named uv (a uv
    cache kept beside the project, say) then imports as a namespace package when uv's own package is not
    installed (here: the interpreter started without site-packages). The lock takes uv from PATH, not an
    internal error on the folder's missing find_uv_bin."""
    (tmp_path / "uv").mkdir()
    code = "from sparkenv.index.uv_binary import uv_binary; import uv; print(uv.__file__); print(uv_binary())"
    proc = subprocess.run(
        [sys.executable, "-S", "-c", code],
        cwd=tmp_path, env={"PYTHONPATH": f"{tmp_path}:{REPO}", "PATH": str(Path(shutil.which("uv")).parent)},
        capture_output=True, text=True, timeout=60,
    )  # fmt: skip
    assert proc.returncode == 0, proc.stderr
    namespace, found = proc.stdout.splitlines()
    assert namespace == "None"  # the folder did import, as a namespace package
    assert Path(found).name == "uv" and Path(found).is_file()

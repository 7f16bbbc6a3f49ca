"""The lock's journey stays short (issue 38): `sparkenv lock` on a loopback index, traced by
benchmarks/journey.py, passes through at most 20 files and enters none more than 4 times, first and on an
unchanged re-lock (the judgement kept). The orchestration (resolve/, lock/api.py) calls each owner once:
the inputs and plan, uv, the judgement and the files. A helper moved back beside the orchestrator, or a
pass-through layer put back, fails here with the file and its entry sites named."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from artifacts import Index, serve

ROOT = Path(__file__).resolve().parents[2]
MAX_FILES, MAX_ENTRIES = 20, 4


@pytest.fixture(scope="module")
def index(tmp_path_factory: pytest.TempPathFactory):
    ix = Index(tmp_path_factory.mktemp("journey-index"))
    ix.wheel("tinydep", "1.2.0")
    ix.wheel("tinypkg", "1.0.0", requires=["tinydep>=1"])
    ix.wheel("unsloth", "2025.11.1", requires=["tinydep"])
    server = serve(ix)
    yield ix
    server.shutdown()


def _journey(tmp_path: Path, index_url: str) -> dict:
    env = {k: v for k, v in os.environ.items() if k not in ("VIRTUAL_ENV", "NVIDIA_PYTORCH_VERSION")}
    env.update({
        "UV_CACHE_DIR": str(tmp_path / "uv"),
        "SPARKENV_CACHE_DIR": str(tmp_path / "sp"),
        "PYTHONPATH": str(ROOT),
    })  # fmt: skip
    cmd = [
        sys.executable, str(ROOT / "benchmarks" / "journey.py"), "--json", "--",
        "lock", "requirements.txt", "--index-url", index_url, "--profile", "spark-bare",
        "--output-dir", "out", "-q",
    ]  # fmt: skip
    proc = subprocess.run(cmd, capture_output=True, text=True, timeout=300, env=env, cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr[-3000:]
    return json.loads(proc.stdout)


def test_the_lock_journey_is_short(index: Index, tmp_path: Path) -> None:
    (tmp_path / "requirements.txt").write_text("tinypkg\nunsloth\n")
    for run in ("first", "unchanged re-lock", "kept judgement"):
        got = _journey(tmp_path, index.url)
        assert got["rc"] == 0, (run, got)
        assert (tmp_path / "out" / "pylock.spark-bare.toml").is_file(), run
        # the lock stage's API is on the way: the command calls it, not its own copy of the lock
        assert "sparkenv/lock/api.py" in got["files"], (run, got["files"])
        assert len(got["files"]) <= MAX_FILES, (run, len(got["files"]), got["files"])
        over = {f: got["sites"][f] for f, n in got["entries"].items() if n > MAX_ENTRIES}
        assert not over, (run, over)

"""check and lock agree on everything check can see: every shipped lock input and a row per judgement of
the declared stage (the Unsloth family, a no-deps file, drift-prone packages, a base pin, flash-attn,
CUDA-12 names) run through both CLIs; each finding check reports has the same verdict in lock's report.
lock resolves with the real uv against a local index over loopback HTTP serving a small real wheel for
every name the inputs use (the verdicts of the declared stage do not depend on the wheels' content)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from artifacts import Index, serve
from packaging.requirements import Requirement

REPO = Path(__file__).resolve().parents[2]
SHIPPED = sorted((REPO / "lockfiles" / "inputs").glob("*.txt"))
ROWS = {
    "unsloth family, unpinned": "peft\nunsloth\nunsloth_zoo\n",
    "unsloth in a no-deps file": "# sparkenv: no-deps\nunsloth\n",
    "drift-prone, not pinned": "transformers\n",
    "drift-prone, pinned": "transformers==4.57.1\n",
    "base pin that replaces": "torch==2.9.1\n",
    "flash-attn": "flash-attn\n",
    "CUDA-12 name": "nvidia-cuda-runtime-cu12\n",
    # the README's check examples that need no other index: a `+cu12x` and a `+cpu` label
    "README: +cu12x label": "torch==2.9.1+cu128\n",
    "README: +cpu label": "torchvision==0.24.1+cpu\n",
}


def _names(text: str) -> set[tuple[str, str]]:
    out = set()
    for line in text.splitlines():
        line = line.split("#", 1)[0].strip()
        if line and not line.startswith("-"):
            req = Requirement(line)
            pins = [s.version for s in req.specifier if s.operator == "=="]
            out.add((req.name, pins[0] if pins else "1.0"))
    return out


@pytest.fixture(scope="module")
def index(tmp_path_factory: pytest.TempPathFactory):  # type: ignore[no-untyped-def]
    ix = Index(tmp_path_factory.mktemp("agree"))
    names: set[tuple[str, str]] = set()
    for text in [*ROWS.values(), *(p.read_text() for p in SHIPPED)]:
        names |= _names(text)
    for name, version in sorted(names):
        ix.wheel(name, version)
    server = serve(ix)
    yield ix
    server.shutdown()


def _json(cwd: Path, *args: str) -> tuple[int, dict]:  # type: ignore[type-arg]
    env = {**os.environ, "UV_CACHE_DIR": str(cwd / ".uv"), "SPARKENV_CACHE_DIR": str(cwd / ".sc")}
    proc = subprocess.run(
        [sys.executable, "-m", "sparkenv", *args, "--format", "json"],
        cwd=cwd,
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert proc.returncode in (0, 1), proc.stdout + proc.stderr
    return proc.returncode, json.loads(proc.stdout)


CASES = {**ROWS, **{f"shipped {p.name}": p.read_text() for p in SHIPPED}}


@pytest.mark.parametrize("case", sorted(CASES))
def test_check_and_lock_give_the_same_verdict_per_finding(case: str, index, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    (tmp_path / "requirements.txt").write_text(CASES[case])
    _, checked = _json(tmp_path, "check", "requirements.txt")
    _, locked = _json(tmp_path, "lock", "requirements.txt", "--index-url", index.url)
    by_lock = {(f["id"], f["subject"]): f for f in locked["findings"]}
    differ = []
    for f in checked["findings"]:
        if f["subject"] == "inputs" or f["status"] == "INFO":
            continue  # counts and the offline note: what each command read, not a verdict
        other = by_lock.get((f["id"], f["subject"]))
        if other is None or other["status"] != f["status"]:
            differ.append((f["id"], f["subject"], f["status"], other and other["status"], f["summary"]))
    assert differ == []
    # a FAIL check sees is a lock that is not written
    if any(f["status"] == "FAIL" for f in checked["findings"]):
        assert locked["verdict"] == "blocked"

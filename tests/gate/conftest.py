"""Fixtures of the gate's tests."""

from __future__ import annotations

import os
import subprocess
import sys

import pytest


@pytest.fixture
def fake_vllm_server(tmp_path):
    """A real process started the way vLLM is (python -m vllm.entrypoints.openai.api_server …)."""
    mod = tmp_path / "srv" / "vllm" / "entrypoints" / "openai"
    mod.mkdir(parents=True)
    for d in (mod, mod.parent, mod.parent.parent):
        (d / "__init__.py").write_text("")
    (mod / "api_server.py").write_text("import time\nprint('ready', flush=True)\ntime.sleep(60)\n")
    procs = []

    def start(fraction: str) -> subprocess.Popen:
        p = subprocess.Popen(
            [
                sys.executable,
                "-m",
                "vllm.entrypoints.openai.api_server",
                "--model",
                "m",
                "--gpu-memory-utilization",
                fraction,
            ],
            stdout=subprocess.PIPE,
            text=True,
            env={**os.environ, "PYTHONPATH": str(tmp_path / "srv")},
        )
        assert p.stdout.readline().strip() == "ready"
        procs.append(p)
        return p

    yield start
    for p in procs:
        p.kill()
        p.wait()

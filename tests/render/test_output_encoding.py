"""Output survives any stdout encoding (issue 11, item 5): under PYTHONIOENCODING=ascii the typographic
dash in messages is replaced, never fatal; JSON stays valid and lossless (\\u escapes)."""

from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest


def cli(*args: str, encoding: str) -> subprocess.CompletedProcess[bytes]:
    env = {k: v for k, v in os.environ.items() if k != "VIRTUAL_ENV"} | {"PYTHONIOENCODING": encoding}
    return subprocess.run([sys.executable, "-m", "sparkenv", *args], capture_output=True, timeout=60, env=env)


@pytest.mark.parametrize("encoding", ["ascii", "latin-1", "ascii:strict"])
def test_explain_prints_under_a_narrow_encoding(encoding: str):
    proc = cli("explain", "G1", encoding=encoding)
    assert proc.returncode == 0, proc.stderr
    assert b"CUDA 12 / CUDA 13" in proc.stdout
    proc.stdout.decode(encoding.split(":")[0])  # what came out is in the encoding asked for


def test_audit_lines_keep_the_contract_under_ascii(env, clean_root):
    env.add("cupy-cuda12x", "13.6.0")  # its FAIL line holds a typographic dash
    proc = cli("audit", str(env.prefix), "--root", str(clean_root), encoding="ascii")
    assert proc.returncode == 1 and proc.stderr == b"", proc.stderr
    text = proc.stdout.decode("ascii")
    assert "G1 FAIL: cupy-cuda12x" in text and "?" in text and text.splitlines()[-1].startswith("verdict:")


def test_json_stays_lossless_under_ascii(env, clean_root):
    env.add("cupy-cuda12x", "13.6.0")
    proc = cli("audit", str(env.prefix), "--root", str(clean_root), "--json", encoding="ascii")
    data = json.loads(proc.stdout.decode("ascii"))
    assert any("—" in f["summary"] for f in data["findings"])  # \u2014 came through as an escape


def test_errors_on_stderr_survive_ascii(tmp_path):
    proc = cli("check", str(tmp_path / "missing—file.txt"), encoding="ascii")
    assert proc.returncode == 2 and b"internal error" not in proc.stderr
    assert b"missing\\u2014file.txt: no such file" in proc.stderr  # stderr escapes what it cannot take

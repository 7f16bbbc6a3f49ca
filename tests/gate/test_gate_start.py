"""The gate's start-up shortcuts keep its verdicts: Triton found from the folder listing (no
metadata read), its ptxas releases read from the files, again whenever the file changed, the modules the
start does without, and the --deep torch process started first and used once."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import gate_helpers as gh
import pytest
from conftest import Env, sparkenv
from kernel_helpers import cuda_ptxas

BIN = "triton/backends/nvidia/bin"
# No CUDA 12.8 toolkit here: the old ptxas is a stand-in holding the string ptxas carries in its bytes.
OLD = b"\x7fELF stand-in\0Cuda compilation tools, release 12.8, V12.8.93\0"


@pytest.fixture
def venv(tmp_path) -> Env:
    """A real venv (the gate resolves it through its interpreter) with Triton 3.6's layout: ptxas of
    CUDA 12.8 and the real CUDA 13 ptxas of this machine's toolkit as ptxas-blackwell."""
    prefix = tmp_path / "venv"
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(prefix)], check=True, timeout=120)
    env = Env(prefix, next(prefix.glob("lib/python3*/site-packages")), "x86_64")
    old = tmp_path / "ptxas-12.8"
    old.write_bytes(OLD)
    env.add("triton", "3.6.0", files={f"{BIN}/ptxas": old, f"{BIN}/ptxas-blackwell": cuda_ptxas()})
    return env


def gate_facts(venv: Env, cache: Path, tmp_path: Path) -> dict:
    dump = tmp_path / "facts.json"
    r = sparkenv(
        "gate", "--python", str(venv.prefix / "bin" / "python"), "--dump-facts", str(dump), "-q",
        env={"SPARKENV_CACHE_DIR": str(cache), "TRITON_PTXAS_PATH": "", "TRITON_PTXAS_BLACKWELL_PATH": ""},
    )  # fmt: skip
    assert r.code in (0, 1), r.err
    return json.loads(dump.read_text())


def gb10_verdict(facts: dict, tmp_path: Path) -> str:
    """The Triton line the same facts give on a GB10 (no GB10 here: its recorded snapshot)."""
    replay = gh.with_changes(gh.gb10_from_reports(), kernel_coverage=facts["kernel_coverage"])
    return sparkenv("gate", "--facts", gh.write(tmp_path, replay, "gb10.json")).line("G7", "triton 3.6.0")


def test_default_gate_reads_triton_from_the_listing_and_its_ptxas(venv, tmp_path):
    cache = tmp_path / "cache"
    facts = gate_facts(venv, cache, tmp_path)
    triton = facts["kernel_coverage"]["triton"]
    assert (triton["name"], triton["version"]) == ("triton", "3.6.0")
    assert triton["bundled"]["ptxas"] == "12.8" and triton["bundled"]["ptxas-blackwell"].startswith("13.")
    assert facts["kernel_coverage"]["packages"] is None  # the default mode reads no fatbin
    line = gb10_verdict(facts, tmp_path)
    assert line.startswith("G7 PASS: triton 3.6.0 compiles with its bundled ptxas-blackwell (CUDA 13."), line


def test_a_changed_ptxas_is_read_again_even_with_its_old_size_and_mtime(venv, tmp_path):
    """ptxas-blackwell replaced in place by a CUDA 12.8 one of the same size, its mtime set back: the
    cached 13.x must not be used, and the GB10 verdict turns to FAIL."""
    cache = tmp_path / "cache"
    assert gb10_verdict(gate_facts(venv, cache, tmp_path), tmp_path).startswith("G7 PASS")
    tool = venv.site / BIN / "ptxas-blackwell"
    before = os.stat(tool)
    data = bytearray(tool.read_bytes())
    at = data.index(b"Cuda compilation tools, release ")
    data[at : at + len(OLD) - 14] = OLD[14:]  # the release string only: same size, same inode
    with open(tool, "r+b") as fh:
        fh.write(data)
    os.utime(tool, ns=(before.st_atime_ns, before.st_mtime_ns))
    after = os.stat(tool)
    assert (after.st_size, after.st_mtime_ns, after.st_ino) == (
        before.st_size,
        before.st_mtime_ns,
        before.st_ino,
    )
    facts = gate_facts(venv, cache, tmp_path)
    assert facts["kernel_coverage"]["triton"]["bundled"]["ptxas-blackwell"] == "12.8"
    line = gb10_verdict(facts, tmp_path)
    assert line.startswith("G7 FAIL: triton 3.6.0 compiles with its bundled ptxas-blackwell (CUDA 12.8)"), (
        line
    )


def _imported(*args: str, env: dict[str, str]) -> set[str]:
    proc = subprocess.run(
        [sys.executable, "-X", "importtime", *args], capture_output=True, text=True, timeout=60, env=env
    )
    return {ln.rsplit("|", 1)[-1].strip() for ln in proc.stderr.splitlines() if ln.startswith("import time:")}


def test_the_default_start_does_without_these_modules(tmp_path):
    """The image entrypoint's start stays lean: no subprocess machinery (its probes' children are forked), no
    importlib.resources with its zipfile and tempfile, no packaging.tags with sysconfig and logging (names
    are canonicalised by sparkenv/core/names.py), no sockets (single node), no hashing. What the
    interpreter's own start imports (site's .pth files: a CA bundle hook imports certifi →
    importlib.resources on some machines) is not the gate's and is left out."""
    env = {**os.environ, "SPARKENV_CACHE_DIR": str(tmp_path)}
    imported = _imported("-m", "sparkenv", "gate", "-q", env=env) - _imported("-c", "pass", env=env)
    assert "sparkenv.gate.probes" in imported  # it did probe
    avoided = {"subprocess", "packaging.tags", "logging", "importlib.resources", "zipfile", "tempfile"}
    avoided |= {"socket", "hashlib"}
    assert not imported & avoided, sorted(imported & avoided)
    assert not {m for m in imported if m.startswith("sparkenv.watch")}  # only under --watch


def test_deep_starts_torch_once_before_the_rest_and_uses_that_process(tmp_path):
    """--deep starts the torch process as soon as the arguments are read (gate/early.py); the probe
    takes that very process: torch is imported once, and its result is the report's."""
    site = tmp_path / "site" / "torch"
    site.mkdir(parents=True)
    starts = tmp_path / "starts"
    (site / "__init__.py").write_text(
        f"import os\nopen({str(starts)!r}, 'a').write(f'{{os.getpid()}}\\n')\nraise ImportError('no torch')\n"
    )
    r = sparkenv("gate", "--deep", env={"PYTHONPATH": str(tmp_path / "site")})
    assert len(starts.read_text().split()) == 1
    assert r.line("G1", "torch").startswith("G1 FAIL: import torch fails: ImportError: no torch"), r.out


@pytest.mark.parametrize("bad", [("--select", "G99"), ("--deadline", "0"), ("--policy", "loud")])
def test_a_bad_argument_starts_no_early_probe(tmp_path, bad):
    """The early start validates first: exit 2, and no torch process was ever started."""
    site = tmp_path / "site" / "torch"
    site.mkdir(parents=True)
    starts = tmp_path / "starts"
    (site / "__init__.py").write_text(f"open({str(starts)!r}, 'a').write('started\\n')\n")
    r = sparkenv("gate", "--deep", *bad, env={"PYTHONPATH": str(tmp_path / "site")})
    assert r.code == 2 and len(r.err.strip().splitlines()) == 1, r.err
    assert not starts.exists()

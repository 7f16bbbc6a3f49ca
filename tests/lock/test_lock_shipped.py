"""The shipped locks: current with their inputs, clean under `sparkenv check`, downloadable with hashes."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest
from artifacts import platform_args

ROOT = Path(__file__).resolve().parents[2]
LOCKS = ROOT / "lockfiles"
REQ = LOCKS / "requirements.ngc-25-11.txt"


def test_shipped_locks_are_current(run):
    r = run("lock", "--check", "--output-dir", str(LOCKS))
    assert r.code == 0 and "pylock.ngc-25-11.toml is current" in r.out, r.out + r.err


def test_shipped_requirements_pass_check(run):
    r = run("check", str(REQ), "--strict")
    assert r.code == 0, r.out
    assert "torch==" not in REQ.read_text()  # the base's torch is never replaced


@pytest.mark.network
def test_every_file_downloads_for_the_target_with_hashes(tmp_path):
    proc = subprocess.run(
        [
            sys.executable, "-m", "pip", "download", "--no-deps", "--require-hashes", "--only-binary=:all:",
            *platform_args("aarch64"), "--python-version", "3.12", "-q", "--disable-pip-version-check",
            "-d", str(tmp_path), "-r", str(REQ),
        ],
        capture_output=True, text=True, timeout=600,
    )  # fmt: skip
    assert proc.returncode == 0, proc.stderr[-2000:]
    pinned = sum(1 for ln in REQ.read_text().splitlines() if "==" in ln and not ln.startswith("#"))
    assert len(list(tmp_path.iterdir())) == pinned


@pytest.mark.network
def test_default_profile_resolves_the_playbook_stack_from_pypi(run, tmp_path):
    """Re-locked in place as of the date the shipped lock records, the playbook stack gives the shipped
    lock again: closed (the Unsloth family's own requirements locked too), nothing of the base replaced.
    In place, as a user re-locks: the lock it replaces hands uv its versions as preferences. A fresh
    resolution as of the same date need not give the same pins: the index's answer for a past date
    moves (seen here: accelerate 1.16.0 and httpx 0.29.0, upload times before the lock's date, picked
    by a fresh resolution after the shipped lock had 1.15.0 and 0.28.1)."""
    import shutil

    from sparkenv.lock import read

    shipped = LOCKS / "pylock.ngc-25-11.toml"
    as_of = read.pylock(shipped).exclude_newer
    shutil.copy(shipped, tmp_path / shipped.name)
    r = run(
        "lock", str(LOCKS / "inputs" / "playbook-unsloth.txt"), "--output-dir", str(tmp_path), "--json",
        "--exclude-newer", as_of,
    )  # fmt: skip
    assert r.code == 0, r.out + r.err
    found = {(f["id"], f["subject"]): f for f in r.json()["findings"]}
    assert "excluded: provided by the base" in found[("G9", "torch")]["summary"]
    assert found[("G9", "closure")]["status"] == "PASS"
    text = (tmp_path / "requirements.ngc-25-11.txt").read_text()
    assert "unsloth==" in text and "torch==" not in text and "nvidia-" not in text

    def pins(t: str) -> list[str]:
        return sorted(ln.split(" ")[0] for ln in t.splitlines() if "==" in ln and not ln.startswith("#"))

    assert pins(text) == pins(REQ.read_text())

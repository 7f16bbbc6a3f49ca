"""G7 (and G1) at lock on real GPU wheels from the public index, each verdict checked against what the audit
says on the very same wheel installed (marked network). `--exclude-newer` holds the index at a date.

- cubins for sm_75 … sm_90 only, no PTX: autoawq-kernels 0.0.9 (x86_64) — nothing runs on SM121: FAIL
- only compute_80 PTX fits SM121: xformers 0.0.35 (x86_64) — a JIT at first use: WARN
- sm_120 and sm_121 cubins: torchcodec 0.17.0 (x86_64) — PASS
"""

from __future__ import annotations

import subprocess
import sys
import zipfile

import pytest
from pypi_lock import by

pytestmark = pytest.mark.network

WHEELS = {  # name==version -> (G7, G1) at lock and at audit, for the GB10
    "autoawq-kernels==0.0.9": ("FAIL", "FAIL"),
    "xformers==0.0.35": ("WARN", "FAIL"),
    "torchcodec==0.17.0": ("PASS", "PASS"),
}
X86 = ["manylinux2014_x86_64", "manylinux_2_17_x86_64", "manylinux_2_28_x86_64", "manylinux_2_34_x86_64"]


def test_real_gpu_wheels_get_the_audits_verdict_at_lock(lock, env, run, clean_root, tmp_path):
    r = lock("".join(f"{w}\n" for w in WHEELS), "--platform", "linux/amd64")
    at_lock = by(r)
    # the same wheels, downloaded by pip from the configured index and installed by unzipping them
    dl = tmp_path / "wheels"
    args = [sys.executable, "-m", "pip", "download", "-q", "--no-deps", "--only-binary=:all:", "-d", str(dl)]
    args += [x for p in X86 for x in ("--platform", p)] + ["--python-version", "3.12", *WHEELS]
    subprocess.run(args, check=True, timeout=900, capture_output=True)
    for whl in sorted(dl.glob("*.whl")):
        with zipfile.ZipFile(whl) as zf:
            zf.extractall(env.site)
    at_audit = by(run("audit", str(env.prefix), "--root", str(clean_root), "--json"))
    for wheel, (g7, g1) in WHEELS.items():
        key = wheel.split("==")[0]
        assert at_lock[("G7", key)]["status"] == at_audit[("G7", key)]["status"] == g7, (
            at_lock[("G7", key)],
            at_audit[("G7", key)],
        )
        assert at_lock[("G1", key)]["status"] == at_audit[("G1", key)]["status"] == g1, (
            at_lock[("G1", key)],
            at_audit[("G1", key)],
        )
        assert "read from its wheel" in at_lock[("G7", key)]["summary"]
    assert "has sm_75, sm_80, sm_86, sm_87, sm_89, sm_90" in at_lock[("G7", "autoawq-kernels")]["summary"]
    assert "compute_80" in at_lock[("G7", "xformers")]["summary"]
    assert r.code == 1 and not (tmp_path / "out").exists()

"""Every CUDA 13 counterpart data/cuda13_counterparts.toml names resolves for the Spark (linux/aarch64,
CPython 3.12) on the public index, in the version range it gives, as a wheel where the data says one
exists: a fix that names a counterpart names something that installs. One `uv pip compile --no-deps`
per kind (wheels only; sdists allowed) over all the counterparts at once."""

from __future__ import annotations

import subprocess

import pytest
from packaging.requirements import Requirement
from packaging.utils import canonicalize_name

from sparkenv.index.uv_binary import uv_binary
from sparkenv.knowledge import cuda13_counterparts

pytestmark = pytest.mark.network
DATA = cuda13_counterparts()


def _resolve(requirements: list[str], wheels_only: bool, tmp_path) -> dict[str, str]:
    req = tmp_path / ("wheels.in" if wheels_only else "any.in")
    req.write_text("\n".join(requirements) + "\n")
    cmd = [
        uv_binary(), "pip", "compile", str(req), "--python-platform", DATA.target, "--python-version", "3.12",
        "--no-deps", "--no-header", "--quiet", "--no-annotate",
        *(["--only-binary", ":all:"] if wheels_only else []),
    ]  # fmt: skip
    proc = subprocess.run(cmd, capture_output=True, text=True, timeout=600)
    assert proc.returncode == 0, f"a counterpart does not resolve for {DATA.target}:\n{proc.stderr}"
    pins = {}
    for line in proc.stdout.splitlines():
        if "==" in line and not line.startswith(("#", " ")):
            name, version = line.split("==", 1)
            pins[canonicalize_name(name.split("[")[0])] = version.split()[0]
    return pins


@pytest.mark.parametrize("wheels_only", [True, False], ids=["wheels", "sdists"])
def test_every_counterpart_resolves_for_the_spark(wheels_only, tmp_path):
    wanted = [requirement for f in DATA.families if f.counterpart and f.wheel == wheels_only
              for requirement in [f"{f.counterpart}{f.versions}"]]  # fmt: skip
    assert wanted
    pins = _resolve(wanted, wheels_only, tmp_path)
    for text in wanted:
        req = Requirement(text)
        key = canonicalize_name(req.name)
        assert key in pins, f"{text}: not in uv's answer {pins}"
        assert req.specifier.contains(pins[key], prereleases=True), f"{text}: uv picked {pins[key]}"


def test_what_the_data_says_has_no_cuda13_build_is_not_on_the_index(tmp_path):
    # FAISS: no -cu13 name exists; if one appears, the data (and the fix) must change
    req = tmp_path / "faiss.in"
    req.write_text("faiss-gpu-cu13\n")
    cmd = [uv_binary(), "pip", "compile", str(req), "--python-platform", DATA.target, "--python-version",
           "3.12", "--no-deps", "--quiet", "--only-binary", ":all:"]  # fmt: skip
    proc = subprocess.run(cmd, capture_output=True, text=True, timeout=300)
    assert proc.returncode != 0 and "faiss-gpu-cu13" in proc.stderr

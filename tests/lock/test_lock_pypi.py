"""Each class of resolver trap, caught on real packages from the public index (PyPI), with the chain
and the fix in the message. `--exclude-newer` holds the index at a date so the verdicts stay put.

- an inference server whose release pins an exact torch newer than the image's: vllm
- a tensor library asking torch>=X.Y.0 where NGC ships X.Y.0a0: compressed-tensors (torch>=2.10.0)
- the Unsloth family with a --no-deps stage: unsloth alone (its own requirements are locked too)
- an old exact aarch64 torch pin that is a CPU-only build: torch==2.5.1 on spark-bare
- a fallback to an old release: deepspeed-mii on spark-bare (0.0.9 of 2023; newer need deepspeed-kernels)
"""

from __future__ import annotations

import pytest
from pypi_lock import by as _by

from sparkenv.core.datafiles import parse_toml

pytestmark = pytest.mark.network
NGC_TORCH = "2.10.0a0+b558c986e8.nv25.11"


def test_inference_server_pinning_a_newer_torch_than_the_image(lock, tmp_path):
    r = lock("vllm\n")
    assert r.code == 1, r.out + r.err
    g9 = _by(r)[("G9", "torch")]
    assert g9["status"] == "FAIL" and "vllm → torch==" in g9["summary"] and NGC_TORCH in g9["summary"]
    assert "--allow-replace torch" in g9["fix"]
    assert not (tmp_path / "out").exists()


def test_tensor_library_range_that_the_ngc_prerelease_misses(lock, tmp_path):
    r = lock("compressed-tensors\n")
    g9 = _by(r)[("G9", "torch")]
    assert r.code == 1 and g9["status"] == "FAIL" and "compressed-tensors → torch>=2.10.0" in g9["summary"]


def test_unsloth_alone_locks_what_it_imports(lock, tmp_path):
    r = lock("unsloth\n")
    assert r.code == 0, r.out + r.err
    data = parse_toml((tmp_path / "out" / "pylock.ngc-25-11.toml").read_text())
    stages = {p["name"]: p["tool"]["sparkenv"]["stage"] for p in data["packages"]}
    assert stages["unsloth"] == stages["unsloth-zoo"] == "2-unsloth"  # the family, --no-deps, last
    assert stages["transformers"] == stages["trl"] == stages["peft"] == "1-packages"
    assert "torch" not in stages and _by(r)[("G9", "closure")]["status"] == "PASS"


def test_old_aarch64_torch_pin_is_a_cpu_only_build(lock, tmp_path):
    r = lock("torch==2.5.1\n", "--profile", "spark-bare")
    g1 = _by(r)[("G1", "torch")]
    assert r.code == 1 and g1["status"] == "FAIL" and "CPU-only build" in g1["summary"]
    assert "download.pytorch.org/whl/cu130" in g1["fix"] and not (tmp_path / "out").exists()


def test_fallback_to_an_old_release_warns_with_why(lock, tmp_path):
    r = lock("deepspeed-mii\n", "--profile", "spark-bare")
    w = _by(r)[("G9", "deepspeed-mii")]
    assert w["status"] == "WARN" and "is a fallback" in w["summary"] and "deepspeed-kernels" in w["summary"]

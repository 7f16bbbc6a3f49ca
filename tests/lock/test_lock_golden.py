"""The lock's bytes and findings, held to files written by an earlier sparkenv: a change made for speed
(uv started first, the judgement after it reorganised) must not change what `sparkenv lock` writes or
says. Real uv, real wheels and sdists on a loopback index; the cases cover the Unsloth family's --no-deps
stage, the base's packages kept out, markers for the other CPU, an extra, an sdist-only pick, a declared
FAIL (nothing resolved) and --allow-replace.

The expected files in golden/ were written by main 5ce4fa3 (before issue 23's lean lock start):
`SPARKENV_GOLDEN_WRITE=1 PYTHONPATH=<main's checkout> pytest tests/lock/test_lock_golden.py`. Rewrite them
the same way when a change to the lock's content is meant, and say so in the commit. Normalised: the
index's port, the report's run time, and the sdists' hashes (gzip stamps the time it compressed)."""

from __future__ import annotations

import hashlib
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest
from artifacts import Index, serve

GOLDEN = Path(__file__).parent / "golden"
LINUX = 'platform_system == "Linux"'

CASES = {
    "playbook-like": (
        "peft\ntransformers>=4.56\nmixed\nneeds-extra[fast]\npuresdist\neinops==0.8.0\nunsloth\n",
        [],
    ),
    "declared-fail": ("cupy-cuda12x\npeft\n", []),
    "allow-replace": ("torch==2.11.0\npeft\n", ["--allow-replace", "torch"]),
}


@pytest.fixture(scope="module")
def index(tmp_path_factory: pytest.TempPathFactory):
    ix = Index(tmp_path_factory.mktemp("golden-index"))
    for arch in ("aarch64", "x86_64"):
        ix.wheel("numpy", "2.1.0", tag=f"cp312-cp312-manylinux_2_17_{arch}")
        ix.wheel(
            "torch",
            "2.11.0",
            tag=f"cp312-cp312-manylinux_2_28_{arch}",
            requires=[f"nvidia-cuda-runtime==13.0.96; {LINUX}"],
        )
        ix.wheel("nvidia-cuda-runtime", "13.0.96", tag=f"py3-none-manylinux_2_27_{arch}")
    ix.wheel("armonly", "1.0", tag="py3-none-manylinux_2_17_aarch64")
    ix.wheel("x86only", "1.0", tag="py3-none-manylinux_2_17_x86_64")
    ix.wheel(
        "mixed",
        "1.0",
        requires=['armonly; platform_machine == "aarch64"', 'x86only; platform_machine == "x86_64"'],
    )
    ix.wheel("peft", "0.19.1", requires=["torch>=2.0", "numpy", "accelerate>=1.0"])
    ix.wheel("accelerate", "1.2.0", requires=["torch>=2.0", "numpy", "pyyaml"])
    ix.wheel("pyyaml", "6.0.2")
    ix.wheel("transformers", "4.57.1", requires=["numpy", "tokenizers>=0.22"])
    ix.wheel("transformers", "4.56.2", requires=["numpy", "tokenizers>=0.22"])
    ix.wheel("tokenizers", "0.22.1", tag="cp39-abi3-manylinux_2_17_aarch64")
    ix.wheel("tokenizers", "0.22.1", tag="cp39-abi3-manylinux_2_17_x86_64")
    ix.wheel("needs-extra", "2.0", requires=['orjson; extra == "fast"', "einops"])
    ix.wheel("orjson", "3.10.0")
    ix.wheel("einops", "0.8.0")
    ix.wheel("cupy-cuda12x", "13.0.0", tag="cp312-cp312-manylinux_2_28_aarch64")
    ix.sdist("puresdist", "1.0")
    ix.wheel("unsloth-zoo", "2026.7.2", requires=["torch", "numpy", "cut-cross-entropy"])
    ix.wheel("cut-cross-entropy", "25.1.1", requires=["torch", "triton"])
    ix.wheel("tyro", "0.9.1")
    ix.wheel(
        "unsloth",
        "2026.7.2",
        requires=["torch", "unsloth-zoo>=2026.7.2", 'xformers; platform_machine == "x86_64"', "tyro"],
    )
    server = serve(ix)
    yield ix
    server.shutdown()


def _normal(text: str, ix: Index) -> str:
    text = re.sub(r"127\.0\.0\.1:\d+", "127.0.0.1:PORT", text)
    text = re.sub(r'"seconds": [0-9.]+', '"seconds": 0', text)
    for sdist in (ix.root / "files").glob("*.tar.gz"):
        text = text.replace(hashlib.sha256(sdist.read_bytes()).hexdigest(), f"<sha256 of {sdist.name}>")
    return text


@pytest.mark.parametrize("case", sorted(CASES))
def test_the_lock_and_its_findings_are_as_they_were(index, tmp_path, case):
    text, args = CASES[case]
    (tmp_path / "requirements.txt").write_text(text)
    env = {k: v for k, v in os.environ.items() if k not in ("VIRTUAL_ENV", "NVIDIA_PYTORCH_VERSION")}
    env.update({"UV_CACHE_DIR": str(tmp_path / "uv"), "SPARKENV_CACHE_DIR": str(tmp_path / "sp")})
    cmd = [sys.executable, "-m", "sparkenv", "lock", "requirements.txt", "--index-url", index.url,
           "--output-dir", "out", "--report", "report.json",
           *args]  # fmt: skip
    proc = subprocess.run(cmd, capture_output=True, text=True, timeout=300, env=env, cwd=tmp_path)
    assert proc.returncode in (0, 1), proc.stderr[-2000:]
    got = {"exit": f"{proc.returncode}\n", "stdout.txt": proc.stdout, "stderr.txt": proc.stderr}
    got["report.json"] = (tmp_path / "report.json").read_text()
    for written in sorted((tmp_path / "out").glob("*")) if (tmp_path / "out").exists() else []:
        got[written.name] = written.read_text()
    got = {name: _normal(value, index) for name, value in got.items()}
    folder = GOLDEN / case
    if os.environ.get("SPARKENV_GOLDEN_WRITE") == "1":
        folder.mkdir(parents=True, exist_ok=True)
        for old in folder.iterdir():
            old.unlink()
        for name, value in got.items():
            (folder / name).write_text(value)
    expected = {p.name: p.read_text() for p in sorted(folder.iterdir())}
    assert got.keys() == expected.keys()
    for name in expected:
        assert got[name] == expected[name], name

"""check's plain-line reader (lock/inputs.plain_requirements) against pip-requirements-parser: where
the plain reader answers, both give the same requirements; every line it cannot read exactly sends the
whole file to the parser."""

from __future__ import annotations

from pathlib import Path

import pytest

from sparkenv.lock import inputs
from sparkenv.lock.includes import prescan

ROOT = Path(__file__).resolve().parents[2]

PLAIN = [
    "numpy\n",
    "torch>=2.8\ntransformers==4.57.1\n\n# a comment\npeft ==0.19.1  # trailing comment\n",
    'bitsandbytes==0.49.2 ; platform_machine == "aarch64"\n',
    "accelerate[deepspeed,testing]>=1.0,<2\n",
    "Flash_Attn~=2.8\nzope.interface!=5.0\n",
    "trl==0.26.1;python_version>='3.10'\n",
    "pkg==1.0#not-a-comment-in-pip\n",  # pip's comment needs whitespace before '#': a bad version
    "# sparkenv: no-deps\nunsloth\nunsloth_zoo\n",
    "\ufeffnumpy\n",
]
NOT_PLAIN = [
    "-r other.txt\nnumpy\n",
    "numpy --hash=sha256:" + "0" * 64 + "\n",
    "--index-url https://example.invalid/simple\nnumpy\n",
    "torch @ https://example.invalid/torch-2.9-cp312-cp312-linux_aarch64.whl\n",
    "./local/pkg\n",
    "pkg.whl\n",
    "pkg-1.0.tar.gz\n",
    "numpy==${NUMPY_VERSION}\n",
    "numpy \\\n  >=1.0\n",
    "numpy # comment \\\nscipy\n",
    "-e git+https://example.invalid/x.git#egg=x\n",
    "numpy==1.0 ; python_version <\n",
]


def _both(tmp_path: Path, text: str) -> tuple[list, list | None]:
    path = tmp_path / "requirements.txt"
    path.write_text(text, encoding="utf-8")
    by_parser = inputs.Inputs([str(path)])
    inputs.parsed_requirements(path, str(path), by_parser, prescan(path, str(path)))
    read = inputs.read([str(path)])
    return [by_parser.requirements, by_parser.files], [read.requirements, read.files]


@pytest.mark.parametrize("text", PLAIN)
def test_plain_files_read_as_the_parser_reads_them(tmp_path, text):
    if inputs.plain_requirements(text.lstrip("\ufeff")) is None and "#not-a" not in text:
        pytest.fail(f"expected the plain reader to take {text!r}")
    try:
        parser, read = _both(tmp_path, text)
    except Exception as exc:  # the parser refuses it: so must the plain path (same error, from the parser)
        with pytest.raises(type(exc)):
            inputs.read([str(tmp_path / "requirements.txt")])
        return
    assert read == parser


@pytest.mark.parametrize("text", NOT_PLAIN)
def test_anything_else_goes_to_the_parser(text):
    assert inputs.plain_requirements(text) is None


def test_the_shipped_inputs_read_the_same_both_ways(tmp_path):
    for shipped in sorted((ROOT / "lockfiles" / "inputs").glob("*.txt")):
        text = shipped.read_text(encoding="utf-8")
        parser, read = _both(tmp_path, text)
        assert read == parser and read[0], shipped.name

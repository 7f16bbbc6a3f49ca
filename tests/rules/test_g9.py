"""rules/g9.py, every stage both ways: drift — pins that replace the base's packages, drift-prone
packages not pinned, the Unsloth family with its dependencies, NGC torch replaced, unmet requirements."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import stage_facts as sf
from rule_table import Row, check, ids

from sparkenv.core.report import Status
from sparkenv.facts import image as base_facts
from sparkenv.facts.lockfile import Currency, LockFileFacts, Outcome
from sparkenv.facts.resolved import FallbackFacts
from sparkenv.index.integrity import HashMismatch

PASS, WARN, FAIL, INFO = Status.PASS, Status.WARN, Status.FAIL, Status.INFO
SHIPPED_LOCK = str(Path(__file__).resolve().parents[2] / "lockfiles" / "pylock.ngc-25-11.toml")
NGC_TORCH = "2.10.0a0+b558c986e8.nv25.11"
NO_DEPS = "install the Unsloth family in a second stage with pip install --no-deps"


def _audit(ctx, *dists, marker: str | None = None, constraint: str | None = None, lock: str | None = None):
    """A real environment of (name, version[, requires]) under a root holding `marker` (a container
    marker file) and `constraint` (an NGC image's /etc/pip/constraint.txt)."""
    for name, version, *requires in dists:
        ctx.env().add(name, version, requires=requires[0] if requires else ())
    if marker:
        (ctx.root / marker).write_text("")
    if constraint is not None:
        (ctx.root / "etc" / "pip").mkdir(parents=True)
        (ctx.root / "etc" / "pip" / "constraint.txt").write_text(constraint)
    return sf.installed(ctx, lock=lock)


def _current(**problem) -> Currency:
    return Currency("p.toml", "out", ("req.txt",), "ngc-25.11", "sha256:x", **problem)


def _base_check(replaced: list[dict]):
    """The facts line base_check.py prints inside the image, read back by the build's own reader."""
    data = {"provided": ["torch", "pytorch-triton"], "replaced": replaced, "moved": []}
    return base_facts.parse([base_facts.MARK + json.dumps(data)])


def _fallback(gap_days: int):
    fb = FallbackFacts("pyfoo", "1.0", "3.0", gap_days, True, False, ("app → pyfoo<2",), ())
    return sf.resolved(
        sf.locked("app", "1.0", ("pyfoo<2",)), sf.locked("pyfoo", "1.0"), roots=("app",), fallbacks=(fb,)
    )


ROWS = [
    # --- Stage.DECLARED ----------------------------------------------------------------------------
    Row(
        "g9.declared",
        "torch left to the base",
        lambda c: sf.declared(c, "torch\n", "ngc-25.11"),
        "torch",
        PASS,
        None,
        "provided by the base",
    ),
    Row(
        "g9.declared",
        "a pin that replaces the base's torch",
        lambda c: sf.declared(c, "torch==2.9.1\n", "ngc-25.11"),
        "torch",
        FAIL,
        "drop the pin",
        "would replace the base's torch",
    ),
    Row(
        "g9.declared",
        "drift-prone, pinned exactly",
        lambda c: sf.declared(c, "transformers==4.56.2\n"),
        "transformers",
        PASS,
        None,
        "pinned exactly",
    ),
    Row(
        "g9.declared",
        "drift-prone, not pinned",
        lambda c: sf.declared(c, "transformers>=4.50\n"),
        "transformers",
        WARN,
        "pin transformers==<version>",
    ),
    Row(
        "g9.declared",
        "Unsloth with its dependencies over NGC torch",
        lambda c: sf.declared(c, "unsloth\n", "ngc-25.11"),
        "unsloth",
        FAIL,
        NO_DEPS,
        "unslothai/notebooks#132",
    ),
    Row(
        "g9.declared",
        "Unsloth in lock's own --no-deps stage",
        lambda c: sf.declared(c, "unsloth\n", "ngc-25.11", staged=True),
        "unsloth",
        PASS,
        None,
        "its own --no-deps stage",
    ),
    # --- Stage.RESOLVED ----------------------------------------------------------------------------
    Row(
        "g9.resolved",
        "a file read whole whose bytes miss the index's sha256",
        lambda c: sf.resolved(
            sf.locked("peft", "0.19.1"),
            hash_mismatches=(HashMismatch("peft-0.19.1-py3-none-any.whl", "u", "ab" * 32, "cd" * 32),),
        ),
        "peft-0.19.1-py3-none-any.whl",
        FAIL,
        "the index serves bytes that do not match its own hash",
        "the index gives sha256 abababababab… but serves bytes with sha256 cdcdcdcdcdcd…",
    ),
    Row(
        "g9.resolved",
        "no file read whole missed its hash",
        lambda c: sf.resolved(sf.locked("peft", "0.19.1")),
        "peft-0.19.1-py3-none-any.whl",
        None,
    ),
    Row(
        "g9.resolved",
        "drift-prone pinned in the lock",
        lambda c: sf.resolved(sf.locked("transformers", "4.56.2")),
        "transformers",
        PASS,
        None,
        "pinned ==4.56.2 in the lock",
    ),
    Row(
        "g9.resolved",
        "the base's torch in the lock",
        lambda c: sf.resolved(sf.locked("torch", "2.9.1"), profile="ngc-25.11"),
        "torch",
        FAIL,
        "exclude torch: the base provides it",
    ),
    Row(
        "g9.resolved",
        "a requirement the base's torch does not meet",
        lambda c: sf.resolved(sf.locked("peft", "0.19.1", ("torch>=2.11",)), profile="ngc-25.11"),
        "torch",
        FAIL,
        "pin a release of peft that accepts torch 2.10.0a0",
        "not met by the base's torch",
    ),
    Row(
        "g9.resolved",
        "a closed lock",
        lambda c: sf.resolved(
            sf.locked("peft", "0.19.1", ("accelerate>=1",)), sf.locked("accelerate", "1.15.0")
        ),
        "closure",
        PASS,
        None,
        "the resolved set is closed",
    ),
    Row(
        "g9.resolved",
        "a lock that is not closed",
        lambda c: sf.resolved(sf.locked("peft", "0.19.1", ("accelerate>=1",))),
        "peft",
        FAIL,
        "add accelerate>=1 to the inputs",
        "accelerate is not in the lock",
    ),
    Row(
        "g9.resolved",
        "an old fallback",
        lambda c: _fallback(900),
        "pyfoo",
        WARN,
        "pin pyfoo to the release you want",
        "is a fallback: the newest release is 3.0",
    ),
    Row("g9.resolved", "a recent release is no fallback", lambda c: _fallback(30), "pyfoo", None),
    # --- Stage.LOCKFILE ----------------------------------------------------------------------------
    Row(
        "g9.lockfile",
        "written: nothing failed, every file read",
        lambda c: LockFileFacts(outcome=Outcome("p.toml", "r.txt", packages=3, stages=2)),
        "p.toml",
        PASS,
        None,
        "wrote p.toml and r.txt: 3 packages",
    ),
    Row(
        "g9.lockfile",
        "a file whose metadata is unknown",
        lambda c: LockFileFacts(outcome=Outcome("p.toml", "r.txt", unknown=2)),
        "lock",
        FAIL,
        "make every file's metadata readable",
    ),
    Row(
        "g9.lockfile",
        "current with its inputs",
        lambda c: LockFileFacts(checked=(_current(),)),
        "p.toml",
        PASS,
        None,
        "is current with req.txt",
    ),
    Row(
        "g9.lockfile",
        "inputs changed since",
        lambda c: LockFileFacts(checked=(_current(inputs_changed=True),)),
        "p.toml",
        FAIL,
        "run sparkenv lock req.txt --profile ngc-25.11 --output-dir out",
        "is stale",
    ),
    # --- Stage.IMAGE -------------------------------------------------------------------------------
    Row(
        "g9.image",
        "the base untouched",
        lambda c: _base_check(replaced=[]),
        "base",
        PASS,
        None,
        "the base's 2 provided packages are untouched",
    ),
    Row(
        "g9.image",
        "a provided package replaced",
        lambda c: _base_check(replaced=[{"name": "torch", "before": [NGC_TORCH], "after": ["2.9.1"]}]),
        "torch",
        FAIL,
        "re-lock with `sparkenv lock` for this profile",
        f"torch {NGC_TORCH} -> 2.9.1",
    ),
    # --- Stage.INSTALLED ---------------------------------------------------------------------------
    Row(
        "g9.installed",
        "inside a container",
        lambda c: _audit(c, marker=".dockerenv"),
        "container",
        PASS,
        None,
        "inside a container",
    ),
    Row(
        "g9.installed",
        "no container marker",
        lambda c: _audit(c),
        "container",
        WARN,
        "run inside an NGC PyTorch container",
    ),
    Row(
        "g9.installed",
        "NGC torch kept",
        lambda c: _audit(c, ("torch", NGC_TORCH), constraint=f"torch=={NGC_TORCH}\n"),
        "torch",
        PASS,
        None,
        "is the NGC image build",
    ),
    Row(
        "g9.installed",
        "NGC torch replaced by pip",
        lambda c: _audit(c, ("torch", "2.9.1"), constraint=f"torch=={NGC_TORCH}\n"),
        "torch",
        FAIL,
        "keep PIP_CONSTRAINT=/etc/pip/constraint.txt",
        "a pip install replaced it",
    ),
    Row(
        "g9.installed",
        "a package off the image's pins",
        lambda c: _audit(
            c, ("torch", NGC_TORCH), ("numpy", "2.3.0"), constraint=f"torch=={NGC_TORCH}\nnumpy==1.26.4\n"
        ),
        "numpy",
        WARN,
        "pip install --no-deps 'numpy==1.26.4'",
    ),
    Row(
        "g9.installed",
        "requirements met",
        lambda c: _audit(c, ("peft", "0.19.1", ["accelerate>=1"]), ("accelerate", "1.15.0")),
        "requirements",
        PASS,
        None,
        "requirements met",
    ),
    Row(
        "g9.installed",
        "a requirement not installed",
        lambda c: _audit(c, ("peft", "0.19.1", ["accelerate>=1"])),
        "peft:accelerate",
        WARN,
        "pip install 'accelerate>=1'",
        "which is not installed",
    ),
    Row(
        "g9.installed",
        "drift against the lock",
        lambda c: _audit(c, ("transformers", "5.16.0"), lock=SHIPPED_LOCK),
        "transformers",
        WARN,
        "pip install --no-deps 'transformers==5.17.0'",
    ),
    Row(
        "g9.installed",
        "as the lock pins",
        lambda c: _audit(c, ("transformers", "5.17.0"), lock=SHIPPED_LOCK),
        "transformers",
        PASS,
        None,
        "matches",
    ),
    Row(
        "g9.installed",
        "the lock leaves torch to the base, a PyPI torch is there",
        lambda c: _audit(c, ("torch", "2.9.1"), lock=SHIPPED_LOCK),
        "torch",
        WARN,
        "the lock keeps it out on purpose",
        "leaves torch to",
    ),
    Row(
        "g9.installed",
        "the lock leaves torch to the base, NGC's is there",
        lambda c: _audit(c, ("torch", NGC_TORCH), lock=SHIPPED_LOCK),
        "torch",
        PASS,
        None,
        "is the base's",
    ),
    # --- Stage.LIVE --------------------------------------------------------------------------------
    Row("g9.live", "inside a container", lambda c: sf.live_raw("h200-static"), "container", PASS),
    Row(
        "g9.live",
        "no container marker",
        lambda c: sf.live_raw("h200-static", container__markers=[]),
        "container",
        WARN,
        "run inside an NGC PyTorch container",
    ),
    Row(
        "g9.live",
        "NGC torch on a GB10",
        lambda c: sf.live_raw("gb10"),
        "torch",
        PASS,
        None,
        "is the NGC image 25.10 build",
    ),
    Row(
        "g9.live",
        "NGC image, a pip torch",
        lambda c: sf.live_raw("h200-static", env__NVIDIA_PYTORCH_VERSION="25.11"),
        "torch",
        FAIL,
        "keep PIP_CONSTRAINT=/etc/pip/constraint.txt",
        "a pip install replaced it",
    ),
    Row(
        "g9.live",
        "Triton on a GB10 without TRITON_PTXAS_PATH",
        lambda c: sf.live_raw("gb10", env={"NVIDIA_PYTORCH_VERSION": "25.10"}),
        "TRITON_PTXAS_PATH",
        WARN,
        "export TRITON_PTXAS_PATH=",
    ),
    Row("g9.live", "Triton with TRITON_PTXAS_PATH", lambda c: sf.live_raw("gb10"), "TRITON_PTXAS_PATH", PASS),
]


@pytest.mark.parametrize("row", ROWS, ids=ids(ROWS))
def test_g9(row, ctx):
    check(row, ctx)

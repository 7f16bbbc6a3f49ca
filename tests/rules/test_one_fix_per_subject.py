"""One fix per subject: where G1 and G9 speak of one requirement (a torch==…+cu128 pin on an NGC base:
G1 for its CUDA 12 build, G9 for replacing the base's torch), both give the one fix that satisfies both
(following G1's "install the CUDA 13 build" alone would give the G9 FAIL again). And no report holds a
PASS about a subject beside a FAIL about the same subject."""

from __future__ import annotations

import pytest
import stage_facts as sf
from test_cuda_names import EXTRAS, NAMES

from sparkenv import rules
from sparkenv.knowledge import cuda13_counterparts


def _declared(ctx, text: str, profile: str):
    return rules.evaluate(rules.Stage.DECLARED, sf.declared(ctx, text, profile=profile))


def test_a_cuda12_torch_pin_on_an_ngc_base_gets_one_fix(ctx):
    found = _declared(ctx, "torch==2.9.1+cu128\n", "ngc-25.11")
    by = {f.id.value: f for f in found if f.subject == "torch"}
    assert by["G1"].status.value == by["G9"].status.value == "FAIL"
    assert by["G1"].fix == by["G9"].fix and by["G1"].fix.startswith("drop the pin")
    # on a bare profile there is no base's torch: the CUDA 13 build is the fix
    bare = [f for f in _declared(ctx, "torch==2.9.1+cu128\n", "spark-bare") if f.subject == "torch"]
    (g1,) = [f for f in bare if f.id.value == "G1"]
    assert "cu130" in g1.fix and all(f.status.value != "FAIL" for f in bare if f.id.value == "G9")


CORPUS = [
    *NAMES, *EXTRAS, "torch==2.9.1+cu128", "torch", "torch==2.10.0a0+b558c986e8.nv25.11",
    "torchao==0.9.0+cpu", "transformer-engine-cu12", "flash-attn==2.8.3", "xformers", "numpy",
    *(n for f in cuda13_counterparts().families for n in f.names),
]  # fmt: skip


@pytest.mark.parametrize("profile", ["ngc-25.11", "spark-bare"])
def test_no_pass_beside_a_fail_of_the_same_subject(profile, ctx):
    found = _declared(ctx, "\n".join(CORPUS) + "\n", profile)
    failed = {f.subject for f in found if f.status.value == "FAIL"}
    contradicting = [
        f"{f.id.value} PASS: {f.summary}" for f in found if f.status.value == "PASS" and f.subject in failed
    ]
    assert not contradicting, contradicting


def test_every_cli_report_of_the_suite_is_held_to_it():
    """tests/conftest.py checks every JSON report a CLI run of the suite prints: a planted report with a
    PASS and a FAIL of one G-number about one subject is refused, two G-numbers are two questions."""
    import json

    from conftest import _no_pass_beside_a_fail

    def report(*findings):
        return json.dumps(
            {"findings": [{"id": i, "status": s, "subject": "torch", "summary": "x"} for i, s in findings]}
        )

    _no_pass_beside_a_fail(("lock",), report(("G9", "PASS"), ("G1", "FAIL")))
    with pytest.raises(AssertionError, match="PASS beside FAIL"):
        _no_pass_beside_a_fail(("lock",), report(("G9", "PASS"), ("G9", "FAIL")))

"""Every fix that names a CUDA 13 counterpart says what data/cuda13_counterparts.toml says of that family
(one function, rules/counterparts.py, reads it), at check (the declared rule over a real requirements
file) and at audit (the fix of an installed package): no name made by swapping a suffix, and a family
without a CUDA 13 build is told so."""

from __future__ import annotations

import pytest
import stage_facts as sf

from sparkenv import rules
from sparkenv.cuda.rules import name_match, target_major
from sparkenv.knowledge import cuda13_counterparts
from sparkenv.rules import counterparts
from sparkenv.rules.g1_declared import fix_for

FAMILIES = cuda13_counterparts().families
NAMES = [(f, name) for f in FAMILIES for name in f.names]


def _expected(fam) -> str:
    if fam.counterpart:
        return f"replace it with {fam.counterpart}{fam.versions}"
    return "no known CUDA 13 build of"


@pytest.mark.parametrize(("fam", "name"), NAMES, ids=[n for _, n in NAMES])
def test_the_declared_fix_names_what_the_data_says(fam, name, ctx):
    found = rules.evaluate(rules.Stage.DECLARED, sf.declared(ctx, f"{name}\n"))
    fixes = [f.fix for f in found if f.subject == name and f.status.value == "FAIL"]
    if name_match(name) is None:  # onnxruntime-gpu: its name says no CUDA major, its wheels do
        assert not fixes
        return
    (fix,) = fixes
    assert _expected(fam) in fix, fix
    if fam.also:
        assert fam.also in fix
    if not fam.counterpart:
        assert fam.advice in fix


@pytest.mark.parametrize(("fam", "name"), NAMES, ids=[n for _, n in NAMES])
def test_every_evidence_kind_routes_through_the_data(fam, name):
    # the same text whatever the evidence (a name, a soname, a Requires-Dist): one function
    for kind in ("name", "soname", "requires"):
        text = fix_for(name, kind, on_base=True)
        assert text == counterparts.fix(name, target_major()) and _expected(fam) in text


def test_toolkit_libraries_are_never_sent_to_their_cu13_placeholders():
    # CUDA 13's cuFFT is nvidia-cufft 12.x; nvidia-cufft-cu13 is an empty 0.0.1 sdist
    text = fix_for("nvidia-cufft-cu12", "name", on_base=True)
    assert text.startswith("replace it with nvidia-cufft>=12,<13 ") and "placeholder" in text
    assert "13.x" not in text


def test_an_unknown_family_gets_no_made_up_name():
    text = fix_for("speechlib-cu12", "name", on_base=False)
    assert "no known CUDA 13 build of speechlib-cu12" in text and "speechlib-cu13" not in text
    assert text.endswith(" or use the NGC image")
    assert "download.pytorch.org" not in fix_for("speechlib", "soname", on_base=True)


def test_a_cudannn_framework_is_not_sent_to_pytorchs_index():
    text = fix_for("nvidia-dali-cuda120", "soname", on_base=True)
    assert "nvidia-dali-cuda130" in text and "download.pytorch.org" not in text


def _whole(fam, name: str, target: int) -> str:
    """The fix a user reads on an NGC base, whole: what the data says, and nothing else."""
    if fam.counterpart:
        return f"replace it with {fam.counterpart}{fam.versions}" + (f" ({fam.also})" if fam.also else "")
    return f"no known CUDA {target} build of {name}: {fam.advice}"


@pytest.mark.parametrize(("fam", "name"), NAMES, ids=[n for _, n in NAMES])
def test_the_fix_is_the_data_and_nothing_more(fam, name):
    # on an NGC base the fix is the data's sentence; off it, the NGC image is offered after one separator
    # (a comma after a counterpart, a semicolon after advice), never a stray one on the base
    target = target_major()
    assert fix_for(name, "name", on_base=True) == _whole(fam, name, target)
    sep = "," if fam.counterpart else ";"
    assert fix_for(name, "name", on_base=False) == f"{_whole(fam, name, target)}{sep} or use the NGC image"


def test_a_family_without_a_counterpart_has_no_requirement_to_write():
    # fix plans write counterparts.requirement() into the requirements file: "" means nothing to write
    for fam in FAMILIES:
        if fam.counterpart:
            assert counterparts.requirement(fam) == f"{fam.counterpart}{fam.versions}"
        else:
            assert counterparts.requirement(fam) == ""

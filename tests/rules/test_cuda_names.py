"""The CUDA major wherever a name or an extra spells it (…-cuda120, …-cu120, …-cu126, …-cuda12x,
…[cuda12], …[cu12], …[core_cu12]) is read by one pattern set (data/cuda.toml [[name]] and extra_regex,
sparkenv/cuda/rules.py): `sparkenv check` (the declared rule) and `sparkenv lock` (the resolved rule,
over the same names as locked packages and as Requires-Dist) give the same verdict on the same names."""

from __future__ import annotations

import pytest
import stage_facts as sf

from sparkenv import rules

NAMES = ["nvidia-dali-cuda120", "mxnet-cu112", "llama-cpp-python-cu126", "somelib-cu120", "otherlib-cuda12",
         "cupy-cuda12x", "nvidia-cufft-cu12"]  # fmt: skip
EXTRAS = ["jax[cuda12]", "somelib[cu12]", "transformer-engine[core_cu12]", "otherlib[cuda12x]", "x[cu126]"]
CLEAN = ["nvidia-dali-cuda130", "cupy-cuda13x", "jax[cuda13]", "somelib-cuda", "libcudf", "x[cpu]"]


def _g1(found, subject: str) -> list[str]:
    return [f.status.value for f in found if f.id.value == "G1" and f.subject == subject]


def _declared(ctx, text: str):
    return rules.evaluate(rules.Stage.DECLARED, sf.declared(ctx, text + "\n", profile="spark-bare"))


@pytest.mark.parametrize("name", NAMES)
def test_check_and_lock_fail_the_same_name(name, ctx):
    major = "11" if name == "mxnet-cu112" else "12"
    at_check = _declared(ctx, name)
    at_lock = rules.evaluate(rules.Stage.RESOLVED, sf.resolved(sf.locked(name, "1.0")))
    assert _g1(at_check, name) == ["FAIL"] == _g1(at_lock, name)
    for found in (at_check, at_lock):
        (f,) = [f for f in found if f.subject == name and f.id.value == "G1"]
        assert f"CUDA {major}" in f.summary


@pytest.mark.parametrize("text", EXTRAS)
def test_check_and_lock_fail_the_same_extra(text, ctx):
    key = text.split("[")[0]
    at_check = _declared(ctx, text)
    assert _g1(at_check, key) == ["FAIL"]
    # at lock, the same requirement written by a package it resolved: the same function reads the extra
    app = sf.locked("app", "1.0", requires=(text,))
    at_lock = rules.evaluate(rules.Stage.RESOLVED, sf.resolved(app))
    (f,) = [f for f in at_lock if f.subject == "app" and f.id.value == "G1"]
    assert f.status.value == "FAIL" and "(CUDA 12)" in f.summary and text in f.summary


@pytest.mark.parametrize("text", CLEAN)
def test_names_and_extras_of_the_target_or_none_pass(text, ctx):
    key = text.split("[")[0]
    assert "FAIL" not in _g1(_declared(ctx, text), key)


def test_check_cli_flags_every_form(run, tmp_path):
    req = tmp_path / "requirements.txt"
    req.write_text("\n".join(NAMES + EXTRAS + CLEAN) + "\n")
    r = run("check", str(req), "--profile", "spark-bare")
    assert r.code == 1, r.out + r.err
    fails = [ln for ln in r.lines if ln.startswith("G1 FAIL: ")]
    assert len(fails) == len(NAMES) + len(EXTRAS), r.out
    for text in NAMES + EXTRAS:
        assert any(ln.startswith(f"G1 FAIL: {text.split('[')[0]}") for ln in fails), text

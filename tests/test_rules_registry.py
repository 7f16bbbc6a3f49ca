"""The rules registry: one judgement per concept, the same verdict and fix at every stage that sees the
same evidence, crashes isolated the same way everywhere, explain generated from the registry."""

from __future__ import annotations

from pathlib import Path

import pytest

from sparkenv import gotchas, profiles, rules
from sparkenv.audit.run import audit
from sparkenv.report import LINE_RE, Finding, Status
from sparkenv.resolve import policy
from sparkenv.resolve.run import check

# (distribution, version): evidence that only a name or a version carries, so every stage sees all of it.
# Not here: a CUDA 12 *library* (nvidia-cublas-cu12) that nothing requires, a WARN in the audit only,
# because "nothing installed requires it" is evidence only an installed environment has.
SAME_EVIDENCE = [
    ("torchao", "0.9.0+cpu", "FAIL"),  # the +cpu example of issue 9: FAIL in check, was WARN in audit
    ("torch", "2.9.1+cu128", "FAIL"),
    ("cupy-cuda12x", "13.6.0", "FAIL"),
    ("cuda-toolkit", "12.8.1", "FAIL"),  # a versioned CUDA wheel: its version is the CUDA version
    ("cupy-cuda13x", "13.6.0", "PASS"),
    ("torch", "2.11.0+cu130", "PASS"),
]


def _declared(tmp_path: Path, key: str, version: str) -> Finding:
    req = tmp_path / "requirements.txt"
    req.write_text(f"{key}=={version}\n")
    found = {(f.id, f.subject): f for f in check([str(req)], "spark-bare", None).findings}
    return found[("G1", key)]


def _resolved(key: str, version: str) -> Finding:
    locked = {
        key: policy.Locked(key, version, "main", [f"{key.replace('-', '_')}-{version}-py3-none-any.whl"])
    }
    findings = policy.check_resolved(locked, [key], profiles.load("spark-bare"), None)
    return next(f for f in findings if (f.id, f.subject) == ("G1", key))


def _installed(env, elves, clean_root: Path, key: str, version: str) -> Finding:
    # torch is judged CPU-only when it has no libtorch_cuda.so: give it one, linking nothing, so the
    # only evidence is the version, as for the other two stages.
    files = {"torch/lib/libtorch_cuda.so": elves.linked()} if key == "torch" else None
    env.add(key, version, files=files)
    report = audit(str(env.prefix), root=str(clean_root))
    return next(f for f in report.findings if (f.id, f.subject) == ("G1", key))


@pytest.mark.parametrize(("key", "version", "expected"), SAME_EVIDENCE)
def test_same_evidence_same_status_and_fix_at_every_stage(
    tmp_path, env, elves, clean_root, key, version, expected
):
    seen = {
        "check": _declared(tmp_path, key, version),
        "lock": _resolved(key, version),
        "audit": _installed(env, elves, clean_root, key, version),
    }
    statuses = {stage: f.status for stage, f in seen.items()}
    assert len(set(statuses.values())) == 1, statuses
    fixes = {stage: f.fix for stage, f in seen.items()}
    assert len(set(fixes.values())) == 1, fixes
    assert statuses["check"].value == expected


def test_cpu_label_fails_in_check_and_audit_alike(tmp_path, env, elves, clean_root):
    declared = _declared(tmp_path, "torchao", "0.9.0+cpu")
    installed = _installed(env, elves, clean_root, "torchao", "0.9.0+cpu")
    assert declared.status is installed.status is Status.FAIL
    assert "CPU-only" in declared.summary and "CPU-only" in installed.summary


def _crash(facts):
    raise KeyError("a field this rule did not expect")


def test_an_audit_rule_that_raises_is_an_error_line(env, clean_root, monkeypatch, capsys):
    """A fault we cannot cause for real (every shipped rule handles the facts we can build), so a
    crashing rule is added to the registry; everything else runs for real, through the CLI's main()."""
    from sparkenv import cli
    from sparkenv.rules import g9

    monkeypatch.setattr(g9, "RULES", (*g9.RULES, rules.Rule(rules.Stage.INSTALLED, _crash, "nothing")))
    monkeypatch.setattr("sys.argv", ["sparkenv", "audit", str(env.prefix), "--root", str(clean_root)])
    with pytest.raises(SystemExit) as ended:
        cli.main()
    out = capsys.readouterr().out
    assert ended.value.code == 0  # an ERROR is not a FAIL; never the internal-error exit 70
    line = next(ln for ln in out.splitlines() if "crashed" in ln)
    assert LINE_RE.match(line) and line.startswith(
        "G9 ERROR: the check test_rules_registry._crash crashed: KeyError"
    )
    assert "verdict: ready-with-warnings" in out and "G9 PASS" not in line


@pytest.mark.parametrize("stage", list(rules.Stage))
def test_a_crash_is_isolated_at_every_stage(stage):
    """The one wrapper, for each stage: a rule that raises is one ERROR finding naming it."""
    rule = rules.Rule(stage, _crash, "nothing")
    (finding,) = rules.run_rule("G4", rule, facts=None)
    assert finding.status is Status.ERROR and "_crash crashed: KeyError" in finding.summary


def test_explain_lists_exactly_the_stages_the_registry_runs(run):
    for gid in rules.GOTCHAS:
        text = run("explain", gid).out
        section = text.split("  check: (", 1)[1].split("  fix:", 1)[0]
        listed = [ln.split(" — ")[0].strip() for ln in section.splitlines()[1:] if " — " in ln]
        assert listed == [r.stage.value for r in rules.rules_of(gid)], gid
    g1 = gotchas.lookup("G1")
    assert [c[0] for c in g1.checks()] == ["declared", "resolved", "installed", "live"]


def test_every_rule_module_declares_its_stages():
    for gid in rules.GOTCHAS:
        found = rules.rules_of(gid)
        assert found, gid
        assert all(isinstance(r.stage, rules.Stage) and r.looks_at for r in found)
        assert len({r.stage for r in found}) == len(found), f"{gid}: one rule per stage"


def _gate_g2_unsloth(env_value: str | None) -> Finding:
    import gate_helpers as gh

    from sparkenv.gate.run import evaluate

    facts = gh.live()
    facts["torch"]["stages"]["flash"] = {"importable": True, "works": True, "version": "2.7.4.post1"}
    facts["torch"]["stages"]["sdpa_override"] = {
        "installed": True,
        "active": False,
        "dispatch": "flash_dense",
    }
    facts["dists"].update({"flash-attn": "2.7.4.post1+25.11", "unsloth": "2026.7.2"})
    if env_value is not None:
        facts["env"]["SPARKENV_SDPA"] = env_value
    findings, _ = evaluate(facts)
    return next(f for f in findings if (f.id, f.subject) == ("G2", "unsloth"))


@pytest.mark.parametrize("word", ["disable", "disabled", "none", "0", "off", "false", "no", " Disable "])
def test_sdpa_switched_off_is_never_a_gate_fail(word):
    """The words patches/sdpa.py accepts to switch the override off are the words the gate knows."""
    from sparkenv.patches.sdpa import mode_from_env

    assert mode_from_env(word) is None
    finding = _gate_g2_unsloth(word)
    assert finding.status is Status.INFO and "switches the override off" in finding.summary


@pytest.mark.parametrize(
    ("word", "status"), [(None, Status.FAIL), ("1", Status.FAIL), ("xformers", Status.FAIL)]
)
def test_sdpa_wanted_and_not_active_is_a_gate_fail(word, status):
    assert _gate_g2_unsloth(word).status is status


def test_unsloth_family_is_one_definition(env, clean_root):
    """unsloth-zoo alone is the family too, in the audit and in the gate (it was "unsloth" only there)."""
    from sparkenv.rules import unsloth

    assert unsloth.installed(["peft", "unsloth-zoo"]) == "unsloth-zoo"
    assert unsloth.installed(["unsloth-zoo", "unsloth"]) == "unsloth"
    assert unsloth.installed(["peft"]) is None

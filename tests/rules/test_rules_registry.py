"""The rules registry: one judgement per concept, the same verdict and fix at every stage that sees the
same evidence, crashes isolated the same way everywhere, explain generated from the registry."""

from __future__ import annotations

from pathlib import Path

import pytest

from sparkenv import gotchas, rules
from sparkenv.audit.run import audit
from sparkenv.core.report import LINE_RE, Finding, Status
from sparkenv.environment import profiles
from sparkenv.facts.resolved import Locked
from sparkenv.lock import policy
from sparkenv.resolve.check import check

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
    locked = {key: Locked(key, version, "main", [f"{key.replace('-', '_')}-{version}-py3-none-any.whl"])}
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
    from sparkenv.cli import commands as cli
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
    assert finding.id == "G4" and finding.status is Status.ERROR
    assert finding.summary == (
        "the check test_rules_registry._crash crashed: KeyError: 'a field this rule did not expect'"
    )
    assert finding.subject == "check test_rules_registry._crash"
    assert finding.fix == (
        "please report it with the facts that caused it (sparkenv gate --dump-facts, or the inputs)"
    )


def test_explain_lists_exactly_the_stages_the_registry_runs(run):
    for gid in rules.GOTCHAS:
        text = run("explain", gid).out
        section = text.split("  check: (", 1)[1].split("  fix:", 1)[0]
        listed = [ln.split(" — ")[0].strip() for ln in section.splitlines()[1:] if " — " in ln]
        assert listed == [r.stage.value for r in rules.rules_of(gid)], gid
    g1 = gotchas.lookup("G1")
    assert [c[0] for c in g1.checks()] == ["host", "declared", "resolved", "installed", "live"]


def test_every_rule_module_declares_its_stages():
    for gid in rules.GOTCHAS:
        found = rules.rules_of(gid)
        assert found, gid
        assert all(isinstance(r.stage, rules.Stage) and r.looks_at for r in found)
        assert len({r.stage for r in found}) == len(found), f"{gid}: one rule per stage"


def test_the_stage_index_names_exactly_the_modules_with_rules_at_that_stage():
    """rules.HAS_STAGE lets check and lock import three rule modules, not ten: it must match RULES."""
    for stage, listed in rules.HAS_STAGE.items():
        having = {gid.value for gid in rules.GOTCHAS if any(r.stage is stage for r in rules.rules_of(gid))}
        assert listed == having, stage


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


# --- The same evidence at every stage that sees it, the gate included: read by each stage's own probe -----

# torch as installed (version label, torch/version.py's cuda, what libtorch_cuda.so links): check and lock
# see the version, the audit and the gate's static probe read the same files.
TORCH_EVIDENCE = [
    ("2.9.1+cu128", "12.8", ("libcudart.so.12",), Status.FAIL),
    ("2.9.1+cpu", None, None, Status.FAIL),
    ("2.11.0+cu130", "13.0", ("libcudart.so.13",), Status.PASS),
]


def _torch_installed(env, elves, version: str, cuda: str | None, needed: tuple[str, ...] | None) -> None:
    lib = {"torch/lib/libtorch_cuda.so": elves.linked(needed)} if needed else {}
    env.add(
        "torch",
        version,
        files={
            "torch/__init__.py": "",
            "torch/version.py": f"__version__ = {version!r}\ncuda = {cuda!r}\n",
            "torch/lib/libtorch_cpu.so": elves.linked(),
            **lib,
        },
    )


def _live(env, raw_changes: dict, monkeypatch, ld_path: list[str] | None = None) -> list[Finding]:
    """The gate over a recorded H200 snapshot whose torch_static section the gate's own static probe read
    from `env` (the loader path set as the workload would have it)."""
    import gate_helpers as gh

    from sparkenv.gate import static_torch
    from sparkenv.gate.run import evaluate

    if ld_path is not None:
        monkeypatch.setenv("LD_LIBRARY_PATH", ":".join(ld_path))
    raw = gh.with_changes(gh.live("h200-static"), **raw_changes)
    if env is not None:
        raw["torch_static"] = static_torch.probe([str(env.site)], env.arch)
    findings, _ = evaluate(raw)
    return findings


def _subject(findings: list[Finding], gid: str, subject: str) -> Finding:
    return next(f for f in findings if (str(f.id), f.subject) == (gid, subject))


@pytest.mark.parametrize(("version", "cuda", "needed", "expected"), TORCH_EVIDENCE)
def test_torch_gets_one_verdict_and_fix_from_check_to_gate(
    tmp_path, env, elves, clean_root, monkeypatch, version, cuda, needed, expected
):
    _torch_installed(env, elves, version, cuda, needed)
    stubs = [str(elves.stub(n).parent) for n in needed or ()]
    seen = {
        "check": _declared(tmp_path, "torch", version),
        "lock": _resolved("torch", version),
        "audit": next(
            f
            for f in audit(str(env.prefix), root=str(clean_root)).findings
            if (f.id, f.subject) == ("G1", "torch")
        ),
        "gate": _subject(_live(env, {}, monkeypatch, stubs), "G1", "torch"),
    }
    assert {stage: f.status for stage, f in seen.items()} == dict.fromkeys(seen, expected)
    fixes = {stage: f.fix for stage, f in seen.items()}
    assert len(set(fixes.values())) == 1, fixes


def _gate_g2(flash: dict, override: dict | None, dists: dict[str, str]) -> list[Finding]:
    import gate_helpers as gh

    from sparkenv.gate.run import evaluate

    facts = gh.live()
    facts["torch"]["stages"]["flash"] = flash
    if override is not None:
        facts["torch"]["stages"]["sdpa_override"] = override
    facts["dists"] = dists
    return evaluate(facts)[0]


NGC_FA = "2.7.4.post1+25.11"


def test_flash_attn_of_the_base_passes_at_every_stage(tmp_path, env, elves, clean_root):
    """NGC's own flash-attn: left to the base in check, its build in the audit, running in the gate."""
    req = tmp_path / "requirements.txt"
    req.write_text("flash-attn\n")
    declared = next(
        f for f in check([str(req)], "ngc-25.11", None).findings if (f.id, f.subject) == ("G2", "flash-attn")
    )
    env.add("flash-attn", NGC_FA, files={"flash_attn_2_cuda.so": elves.linked(("libcudart.so.13",))})
    installed = next(
        f
        for f in audit(str(env.prefix), root=str(clean_root)).findings
        if (f.id, f.subject) == ("G2", "flash-attn")
    )
    live = _subject(
        _gate_g2({"importable": True, "works": True, "version": NGC_FA}, None, {"flash-attn": NGC_FA}),
        "G2",
        "flash-attn",
    )
    assert [f.status for f in (declared, installed, live)] == [Status.PASS] * 3
    assert [f.fix for f in (declared, installed, live)] == [None] * 3


def test_unsloth_with_the_override_passes_in_the_audit_and_the_gate(env, elves, clean_root):
    from sparkenv.knowledge import packages

    env.add("flash-attn", NGC_FA, files={"flash_attn_2_cuda.so": elves.linked(("libcudart.so.13",))})
    env.add("unsloth", "2026.7.2")
    (env.site / packages().sdpa_override_pth).write_text("import _sparkenv_sdpa\n")
    installed = next(
        f
        for f in audit(str(env.prefix), root=str(clean_root)).findings
        if (f.id, f.subject) == ("G2", "unsloth")
    )
    live = _subject(
        _gate_g2(
            {"importable": True, "works": True, "version": NGC_FA},
            {"installed": True, "active": True, "dispatch": "sdpa"},
            {"flash-attn": NGC_FA, "unsloth": "2026.7.2"},
        ),
        "G2",
        "unsloth",
    )
    assert installed.status is live.status is Status.PASS and installed.fix is live.fix is None


def test_unsloth_without_the_override_is_told_the_same_command(env, elves, clean_root):
    """Without the override the audit warns (it cannot see $SPARKENV_SDPA); the gate, which sees that
    SDPA is not asked for, informs, or fails when it is: both name the one command that installs it."""
    env.add("flash-attn", NGC_FA, files={"flash_attn_2_cuda.so": elves.linked(("libcudart.so.13",))})
    env.add("unsloth", "2026.7.2")
    installed = next(
        f
        for f in audit(str(env.prefix), root=str(clean_root)).findings
        if (f.id, f.subject) == ("G2", "unsloth")
    )
    flash = {"importable": True, "works": True, "version": NGC_FA}
    dists = {"flash-attn": NGC_FA, "unsloth": "2026.7.2"}
    informed = _subject(_gate_g2(flash, {"installed": False, "active": False}, dists), "G2", "unsloth")
    wanted = _subject(_gate_g2(flash, {"installed": True, "active": False}, dists), "G2", "unsloth")
    assert (installed.status, informed.status, wanted.status) == (Status.WARN, Status.INFO, Status.FAIL)
    command = "sparkenv patch sdpa --install"
    assert command in (installed.fix or "") and command in informed.summary and command in (wanted.fix or "")


NGC_TORCH = "2.10.0a0+b558c986e8.nv25.11"


@pytest.mark.parametrize(("torch", "expected"), [(NGC_TORCH, Status.PASS), ("2.9.1", Status.FAIL)])
def test_ngc_torch_one_verdict_in_the_audit_and_the_gate(env, clean_root, torch, expected):
    """Inside an NGC image (its /etc/pip/constraint.txt), torch is NGC's build or pip replaced it: the same
    finding, summary and fix from the audit of the image and from the gate running in it."""
    import gate_helpers as gh

    from sparkenv.gate.run import evaluate

    (clean_root / "etc" / "pip").mkdir(parents=True)
    (clean_root / "etc" / "pip" / "constraint.txt").write_text(f"torch=={NGC_TORCH}\n")
    env.add("torch", torch)
    installed = next(
        f
        for f in audit(str(env.prefix), root=str(clean_root)).findings
        if (f.id, f.subject) == ("G9", "torch")
    )
    raw = gh.live("h200-static")
    raw["container"]["ngc"] = {"constraint_file": "/etc/pip/constraint.txt"}  # what the gate's probe records
    raw["dists"]["torch"] = torch
    live = _subject(evaluate(raw)[0], "G9", "torch")
    assert installed.status is live.status is expected
    assert (installed.summary, installed.fix) == (live.summary, live.fix)


@pytest.mark.parametrize(("build", "expected"), [("sm120", Status.PASS), ("sm90", Status.FAIL)])
def test_kernels_one_verdict_in_the_audit_and_the_gate(env, clean_root, kernels, build, expected):
    """The same real fatbin, judged for the GB10 by the audit and by the gate's --deep kernel probe."""
    import gate_helpers as gh

    from sparkenv.environment import kernels as kernel_probe
    from sparkenv.gate.run import evaluate

    env.add("mylib", "1.0", files={"mylib/_k.so": kernels.so(build)})
    installed = next(
        f
        for f in audit(str(env.prefix), root=str(clean_root)).findings
        if (f.id, f.subject) == ("G7", "mylib")
    )
    raw = gh.gb10_from_reports()
    raw["kernel_coverage"] = kernel_probe.gather([str(env.site)], (12, 1), {})
    live = _subject(evaluate(raw)[0], "G7", "mylib")
    assert installed.status is live.status is expected
    assert (installed.summary, installed.fix) == (live.summary, live.fix)


def test_no_container_marker_one_verdict_and_fix_in_the_audit_and_the_gate(env, clean_root):
    import gate_helpers as gh

    from sparkenv.gate.run import evaluate

    installed = next(
        f
        for f in audit(str(env.prefix), root=str(clean_root)).findings
        if (f.id, f.subject) == ("G9", "container")
    )
    raw = gh.live("h200-static")
    raw["container"]["markers"] = []
    live = _subject(evaluate(raw)[0], "G9", "container")
    assert installed.status is live.status is Status.WARN
    assert installed.fix == live.fix


def test_every_rule_named_lazily_is_there():
    """rules.Lazy: each names a function that its stage module defines, so a rule that runs late cannot
    fail to import."""
    import importlib

    lazy = 0
    for gid in rules.GOTCHAS:
        for rule in rules.rules_of(gid):
            if isinstance(rule.check, rules.Lazy):
                lazy += 1
                assert callable(getattr(importlib.import_module(rule.check.__module__), rule.check.__name__))
    assert lazy >= 9  # g1's three and g9's six at least


def test_a_rule_named_lazily_runs_the_function_it_names(ctx):
    """A fresh rules.Lazy (the registry's were imported long before): named by its gotcha for `sparkenv
    explain`, it imports its module at the first call and gives what the function gives, call after call."""
    import stage_facts as sf

    from sparkenv.rules import g1_declared

    lazy = rules.Lazy("g1_declared", "declared")
    assert rules.Rule(rules.Stage.DECLARED, lazy, "names").name == "g1.declared"
    facts = sf.declared(ctx, "torch==2.9.1+cpu\n")
    expected = g1_declared.declared(facts)
    assert [f.status for f in expected if f.subject == "torch"] == [Status.FAIL]
    assert lazy(facts) == expected and lazy(facts) == expected


def test_a_stage_judges_only_the_gotchas_asked(ctx):
    """`sparkenv watch` asks G3, G4 and G6 of its readings: evaluate runs only the rules of those asked."""
    import stage_facts as sf

    from sparkenv.core.report import GotchaId

    facts = sf.declared(ctx, "torch==2.9.1+cpu\nflash-attn==2.8.3\n")
    assert {f.id for f in rules.evaluate(rules.Stage.DECLARED, facts)} == {"G1", "G2", "G9"}
    assert {f.id for f in rules.evaluate(rules.Stage.DECLARED, facts, (GotchaId.G1,))} == {"G1"}


@pytest.mark.parametrize("stage", sorted(rules.HAS_STAGE, key=list(rules.Stage).index))
def test_a_stage_asks_only_the_rule_modules_with_rules_at_it(stage, monkeypatch):
    """`sparkenv check` must not import G7's ELF and fatbin readers: rules_for looks only into the modules
    HAS_STAGE names. A spy around rules.module (the one place a rule module is imported) records which."""
    asked = []
    real = rules.module

    def spy(gid):
        asked.append(str(gid.value if hasattr(gid, "value") else gid))
        return real(gid)

    monkeypatch.setattr(rules, "module", spy)
    found = rules.rules_for(stage)
    assert sorted(asked) == sorted(rules.HAS_STAGE[stage])
    assert {gid.value for gid, _ in found} == set(rules.HAS_STAGE[stage])

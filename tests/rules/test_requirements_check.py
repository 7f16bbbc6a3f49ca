"""rules/requirements.py in-process: what `pip check` reports, read from outside, on real environments
(dist-info written the way a wheel installer leaves it, a real interpreter ELF and pyvenv.cfg, read by
audit/scan.py) — the requirement spelled one way, markers evaluated for the audited environment (its CPU
and its full Python version from pyvenv.cfg, not this host's), the extras asked for followed, pre-releases
accepted, a version pip cannot order left alone, an unparseable Requires-Dist said once. tests/audit/
test_audit_pip_check.py holds the same environments against pip check itself, through the CLI."""

from __future__ import annotations

import dataclasses

import stage_facts as sf

from sparkenv.rules import requirements


def check(ctx, *dists, arch="x86_64", cfg=None):
    env = ctx.env(arch)
    for name, version, *requires in dists:
        env.add(name, version, requires=requires[0] if requires else ())
    if cfg is not None:
        (env.prefix / "pyvenv.cfg").write_text(cfg)
    facts = sf.installed(ctx, arch)
    return requirements.find(facts), facts


def test_conflict_and_missing_spelled_one_way(ctx):
    (broken, unparsed, checked), _ = check(
        ctx,
        ("app", "1.0", ["Lib_Two", "lib>=2", "Tool[Fast,docs] >=1", "ok-dep>=1,<2"]),
        ("lib", "1.5"),
        ("tool", "0.9"),
        ("ok_dep", "1.4rc1"),  # a pre-release satisfies >=1,<2, as pip check says
    )
    assert unparsed == []
    assert broken == [
        requirements.Broken("app", "1.0", "lib>=2", "lib", "1.5"),
        requirements.Broken("app", "1.0", "lib-two", "lib-two", None),
        requirements.Broken("app", "1.0", "tool[docs,fast]>=1", "tool", "0.9"),
    ]
    assert [b.missing for b in broken] == [False, True, False]
    assert checked == 4


def test_direct_reference_is_spelled_with_its_url(ctx):
    (broken, _, _), _ = check(ctx, ("app", "1.0", ["Lib_X @ https://example.org/lib_x-1.0-py3-none-any.whl"]))
    assert [b.requirement for b in broken] == ["lib-x @ https://example.org/lib_x-1.0-py3-none-any.whl"]


def test_extras_asked_for_are_followed_and_counted_once(ctx):
    (broken, _, checked), _ = check(
        ctx,
        ("app", "1.0", ["tool[fast]>=1"]),
        ("tool", "1.0", ["speedup>=1; extra == 'fast'", "core>=2", "docsdep; extra == 'docs'"]),
        ("core", "2.0"),
    )
    assert broken == [requirements.Broken("tool", "1.0", "speedup>=1", "speedup", None, "fast")]
    # app → tool, tool → core (its base, not again for the extra), tool[fast] → speedup
    assert checked == 3


def test_an_extra_of_an_extra(ctx):
    (broken, _, _), _ = check(
        ctx,
        ("app", "1.0", ["tool[fast]"]),
        ("tool", "1.0", ["accel[gpu]; extra == 'fast'"]),
        ("accel", "1.0", ["cupy>=13; extra == 'gpu'"]),
    )
    assert [(b.requirer, b.required, b.via_extra) for b in broken] == [("accel", "cupy", "gpu")]


def test_markers_are_the_audited_environments(ctx):
    reqs = [
        "x86only; platform_machine == 'x86_64'",
        "armonly; platform_machine == 'aarch64'",
        "newpy; python_full_version >= '3.12.3'",
        "oldpy; python_full_version < '3.12.3'",
        "win; sys_platform == 'win32'",
    ]
    (broken, _, checked), facts = check(ctx, ("app", "1.0", reqs), arch="aarch64")
    assert sorted(b.required for b in broken) == ["armonly", "newpy"]
    assert checked == 2
    assert requirements.marker_env(facts.target)["python_full_version"] == "3.12.3"
    assert requirements.marker_env(facts.target)["platform_machine"] == "aarch64"


def test_full_python_version_from_version_info(ctx):
    _, facts = check(ctx, cfg="home = /usr/bin\nversion_info = 3.12.7.final.0\n")
    assert requirements.marker_env(facts.target)["python_full_version"] == "3.12.7"


def test_the_full_version_is_read_as_the_target_reads_pyvenv_cfg(ctx):
    """One reader of pyvenv.cfg (environment/target.py): a version line past the first 64 KiB is read
    whole (an earlier reader of its own cut the file there, and `3.12.10` cut after `3.12.1` would have
    been taken for 3.12.1). A damaged file is named by target resolution itself (exit 2)."""
    line = "version = 3.12.10\n"
    pad = "# " + "x" * (65536 - line.rindex("0") - 3) + "\n"  # `3.12.1` ends at character 65,536
    assert len(pad + line[: line.rindex("0")]) == 65536
    _, facts = check(ctx, cfg=pad + line)
    assert requirements.marker_env(facts.target)["python_full_version"] == "3.12.10"


def test_no_full_version_recorded_falls_back_to_the_minor(ctx):
    _, facts = check(ctx, cfg="home = /usr/bin\nversion = 3.12\nprompt = x\n")
    env = requirements.marker_env(facts.target)
    assert (env["python_version"], env["python_full_version"]) == ("3.12", "3.12.0")
    (broken, _, _), _ = check(ctx, ("app", "1.0", ["newpy; python_full_version >= '3.12.3'"]))
    assert broken == []


def test_version_pip_cannot_order_is_no_finding(ctx):
    (broken, _, checked), _ = check(ctx, ("app", "1.0", ["legacy>=2"]), ("legacy", "1.0-custom-build"))
    assert broken == [] and checked == 1


def test_unparseable_requirement_is_said_once_with_the_reason(ctx):
    (broken, unparsed, checked), _ = check(
        ctx,
        ("app", "1.0", ["lib>=>2", "tool[fast]"]),
        ("tool", "1.0", ["bad name!!; extra == 'fast'"]),
    )
    # each once, from the base pass: tool's bad line is not said again when its extra is followed
    assert sorted((u.requirer, u.text) for u in unparsed) == [
        ("app", "lib>=>2"),
        ("tool", "bad name!!; extra == 'fast'"),
    ]
    assert all(u.reason and "\n" not in u.reason for u in unparsed)
    assert broken == [] and checked == 1


def test_broken_sorted_by_requirer_extra_and_name(ctx):
    (broken, _, _), _ = check(
        ctx,
        ("zed", "1", ["b-missing", "a-missing"]),
        ("app", "1", ["zed[x]", "q-missing"]),
        ("zed2", "1"),
    )
    assert [(b.requirer, b.via_extra, b.required) for b in broken] == [
        ("app", "", "q-missing"),
        ("zed", "", "a-missing"),
        ("zed", "", "b-missing"),
    ]


def test_grouped_per_requiring_distribution(ctx):
    (broken, _, _), _ = check(
        ctx, ("app", "1.0", ["lib>=2", "gone"]), ("lib", "1.5"), ("tool", "2", ["x; extra == 'a'"])
    )
    assert requirements.grouped(broken) == [
        {
            "distribution": "app",
            "version": "1.0",
            "problems": [
                {"requirement": "gone", "required": "gone", "installed": None, "extra": None},
                {"requirement": "lib>=2", "required": "lib", "installed": "1.5", "extra": None},
            ],
        }
    ]
    assert requirements.grouped([requirements.Broken("t", "2", "x", "x", None, "a")])[0]["problems"] == [
        {"requirement": "x", "required": "x", "installed": None, "extra": "a"}
    ]


def test_grouped_once_per_distribution_in_the_order_found(ctx):
    """Two distributions with broken requirements are two entries of the JSON report's context."""
    (broken, _, _), _ = check(ctx, ("app", "1.0", ["gone"]), ("peft", "0.17.1", ["accelerate>=1"]))
    assert [(g["distribution"], g["version"], len(g["problems"])) for g in requirements.grouped(broken)] == [
        ("app", "1.0", 1),
        ("peft", "0.17.1", 1),
    ]


def test_a_different_environment_is_checked_again(ctx):
    """The last answer is kept for the same facts (the audit asks three times); other facts are checked."""
    (broken, _, _), facts = check(ctx, ("app", "1.0", ["lib>=2"]), ("lib", "1.5"))
    dists = {k: df.dist for k, df in facts.dists.items()}
    assert requirements.check(facts.target, dists)[0] == broken
    fewer = {k: d for k, d in dists.items() if k != "lib"}
    assert requirements.check(facts.target, fewer)[0] == [
        requirements.Broken("app", "1.0", "lib>=2", "lib", None)
    ]
    # as many distributions, other objects: another environment's app and lib 2.1
    ctx.env("aarch64").add("app", "1.0", requires=["lib>=2"])
    ctx.env("aarch64").add("lib", "2.1")
    arm = sf.installed(ctx, "aarch64").dists
    assert requirements.check(facts.target, {k: arm[k].dist for k in dists})[0] == []


def test_the_same_distributions_on_another_target_are_checked_again(ctx):
    """The last answer is kept only for the same target: the same distributions judged for another CPU
    (sparkenv audit --machine) evaluate their markers again."""
    (broken, _, _), facts = check(ctx, ("app", "1.0", ["armonly; platform_machine == 'aarch64'"]))
    assert broken == []
    dists = {k: df.dist for k, df in facts.dists.items()}
    arm = dataclasses.replace(facts.target, machine="aarch64")
    assert requirements.check(arm, dists)[0] == [
        requirements.Broken("app", "1.0", "armonly", "armonly", None)
    ]
    assert requirements.check(facts.target, dists)[0] == []

"""rules/g9_resolved.py (G9 at lock): the words each verdict gives and the edges where it changes — the
base's exact NGC versions (`2.10.0a0+b558c986e8.nv25.11` from data/profiles/ngc-25.11.toml, a
pre-release that `torch>=2.10` does not accept and `torch>=2.9` does), one chain or several, a name the
base provides under another name (triton → pytorch-triton), what --allow-replace hands to the lock, a
--no-deps stage, fallbacks. The facts are built the way `sparkenv lock` hands them to the policy
(stage_facts.resolved)."""

from __future__ import annotations

import dataclasses

import stage_facts as sf

from sparkenv.core.report import GotchaId, Status, merge_by_subject
from sparkenv.environment import profiles
from sparkenv.facts.resolved import BuildFailure, FallbackFacts, MetadataProblem, Unresolved
from sparkenv.index.integrity import HashMismatch
from sparkenv.rules import g9_resolved

NGC = "ngc-25.11"
TORCH = profiles.load(NGC).provides["torch"]  # 2.10.0a0+b558c986e8.nv25.11
TRITON = profiles.load(NGC).provides["pytorch-triton"]
IMAGE = profiles.load(NGC).image


def judge(*pkgs, excluded_names=None, **kw):
    """G9's findings at lock, merged per subject as `rules.evaluate` merges them."""
    facts = sf.resolved(*pkgs, **kw)
    if (
        excluded_names is not None
    ):  # what resolve/resolved.py keeps out: the base's names less --allow-replace
        facts = dataclasses.replace(facts, excluded_names=excluded_names)
    found = g9_resolved.resolved(facts)
    assert all(f.id is GotchaId.G9 for f in found)
    return merge_by_subject(found)


def about(found, subject):
    mine = [f for f in found if f.subject == subject]
    assert len(mine) == 1, found
    return mine[0]


def test_the_ngc_torch_version_is_a_pre_release_of_its_release():
    assert TORCH.startswith("2.10.0a0+") and TORCH.endswith(".nv25.11")
    ok = judge(sf.locked("peft", "0.19.1", ("torch>=2.9",)), profile=NGC)
    assert about(ok, "torch").status is Status.PASS
    assert about(ok, "torch").summary == f"peft → torch excluded: provided by the base (torch {TORCH})"
    assert about(ok, "closure").status is Status.PASS
    bad = about(judge(sf.locked("peft", "0.19.1", ("torch>=2.10",)), profile=NGC), "torch")
    assert bad.status is Status.FAIL and f"not met by the base's torch {TORCH}" in bad.summary
    assert about(judge(sf.locked("peft", "0.19.1", ("torch>=2.10.0a0",)), profile=NGC), "torch").status is (
        Status.PASS
    )


def test_one_chain_that_replaces_the_base():
    f = about(judge(sf.locked("peft", "0.19.1", ("torch>=2.11",)), profile=NGC), "torch")
    assert f.status is Status.FAIL
    assert f.summary == (
        f"peft → torch>=2.11: not met by the base's torch {TORCH} ({IMAGE}, pre-releases count); installed "
        "with pip, this replaces the base's torch"
    )
    assert f.evidence == ("peft → torch>=2.11", f"base: torch {TORCH}")
    assert f.fix == (
        f"pin a release of peft that accepts torch {TORCH}, choose another profile (`sparkenv profiles`), or "
        "replace the base's torch on purpose with --allow-replace torch (recorded in the lock)"
    )


def test_several_chains_are_listed_shortest_first_and_counted_past_four():
    """Equal lengths by name: the same words on every run (a set's order once changed them between runs)."""
    pkgs = [sf.locked(f"pkg{i}", "1.0", ("torch<2.10",)) for i in range(5)]
    pkgs.append(sf.locked("app-long-name", "1.0", ("torch>=2.11",)))
    f = about(judge(*pkgs, profile=NGC), "torch")
    assert f.summary.startswith(
        "pkg0 → torch<2.10; pkg1 → torch<2.10; pkg2 → torch<2.10; pkg3 → torch<2.10; … (2 more): "
        "not met by "
        f"the base's torch {TORCH} ({IMAGE}, pre-releases count); installed with pip, these replace the "
        "base's torch"
    )
    assert f.evidence[-1] == f"base: torch {TORCH}" and len(f.evidence) == 7
    assert f.fix.startswith(
        f"pin releases of app-long-name, pkg0, pkg1, pkg2, pkg3, pkg4 that accept torch {TORCH},"
    )


def test_a_name_the_base_provides_under_another_name():
    f = about(judge(sf.locked("trl", "1.0", ("triton>=3.9",)), profile=NGC), "pytorch-triton")
    assert f.status is Status.FAIL
    assert f.summary.startswith(f"trl → triton>=3.9: not met by the base's pytorch-triton {TRITON}")
    assert "--allow-replace pytorch-triton" in f.fix
    # a chain that conflicts with the base's pytorch-triton: no "provided by the base" said beside it
    both = judge(sf.locked("trl", "1.0", ("triton>=3.9",)), sf.locked("app", "1.0", ("triton",)), profile=NGC)
    assert not [x for x in both if x.subject == "triton"]
    kept = about(judge(sf.locked("app", "1.0", ("triton",)), profile=NGC), "triton")
    assert kept.status is Status.PASS
    assert kept.summary == f"app → triton excluded: provided by the base (pytorch-triton {TRITON})"
    assert kept.evidence == ("app → triton",)


def test_a_direct_reference_to_what_the_base_provides_replaces_it():
    url = "https://example.org/torch-2.9.1-cp312-cp312-linux_aarch64.whl"
    found = judge(sf.locked("peft", "0.19.1", (f"torch @ {url}",)), profile=NGC)
    f = about(found, "torch")
    assert f.status is Status.FAIL and f.evidence[0] == f"peft → torch @ {url}"


def test_the_base_providing_for_many_chains_is_said_once():
    pkgs = [sf.locked(f"p{i}", "1.0", ("torch",)) for i in range(6)]
    f = about(judge(*pkgs, profile=NGC), "torch")
    assert f.summary == (
        f"p0 → torch; p1 → torch; p2 → torch; p3 → torch … excluded: provided by the base (torch {TORCH})"
    )
    assert len(f.evidence) == 6
    four = about(judge(*pkgs[:4], profile=NGC), "torch")
    assert (
        four.summary
        == f"p0 → torch; p1 → torch; p2 → torch; p3 → torch excluded: provided by the base (torch {TORCH})"
    )


def test_a_provided_version_the_profile_does_not_record():
    """ngc-25.10 records no torchvision version (UNVERIFIED): a range on it cannot be judged."""
    found = judge(
        sf.locked("peft", "0.19.1", ("torchvision>=0.2", "torch")),
        sf.locked("trl", "1.0", ("torchvision>=0.1",)),
        profile="ngc-25.10",
    )
    f = about(found, "torchvision")
    assert f.status is Status.WARN and f.fix == "record provides.torchvision in the profile"
    assert f.evidence == ("trl → torchvision>=0.1", "peft → torchvision>=0.2")
    assert f.summary.startswith(
        "trl → torchvision>=0.1; peft → torchvision>=0.2: the base provides torchvision but "
    )
    assert f.summary.endswith("does not record its version; cannot tell whether it would be replaced")
    bare = about(judge(sf.locked("peft", "0.19.1", ("torchvision",)), profile="ngc-25.10"), "torchvision")
    assert bare.status is Status.PASS
    assert bare.summary.endswith("excluded: provided by the base (torchvision version not recorded)")


def test_allow_replace_hands_the_package_to_the_lock():
    """--allow-replace torch: the lock carries its own torch, judged as any locked package."""
    ok = judge(
        sf.locked("peft", "0.19.1", ("torch>=2.11",)),
        sf.locked("torch", "2.11.0"),
        profile=NGC,
        allow_replace=frozenset({"torch"}),
        excluded_names=(),
    )
    assert not [f for f in ok if f.status is not Status.PASS]
    old = judge(
        sf.locked("peft", "0.19.1", ("torch>=2.11",)),
        sf.locked("torch", "2.9.1"),
        profile=NGC,
        allow_replace=frozenset({"torch"}),
        excluded_names=(),
    )
    f = about(old, "peft")
    assert f.status is Status.FAIL and "requires torch>=2.11 and the lock has torch 2.9.1" in f.summary


def test_the_base_package_in_the_lock():
    f = about(
        judge(sf.locked("torch", "2.9.1"), sf.locked("trl", "1", ("torch",)), roots=("trl",), profile=NGC),
        "torch",
    )
    assert f.status is Status.FAIL
    assert f.summary.startswith(
        "torch 2.9.1 (via trl → torch) would be installed beside or over the base's torch"
    )
    assert f.evidence[:2] == ("torch-2.9.1-py3-none-any.whl", "via trl → torch")
    assert f.fix == "exclude torch: the base provides it"
    alias = about(judge(sf.locked("triton", "3.5.0"), profile=NGC), "triton")
    assert (
        alias.summary
        == "triton 3.5.0 (via triton) would be installed beside or over the base's pytorch-triton"
    )


def test_drift_prone_pin_in_the_lock():
    f = about(judge(sf.locked("transformers", "4.56.2")), "transformers")
    assert (f.status, f.summary) == (Status.PASS, "transformers pinned ==4.56.2 in the lock")
    assert f.evidence == ("transformers-4.56.2-py3-none-any.whl", "via transformers")
    assert not [f for f in judge(sf.locked("peft", "0.19.1")) if f.subject == "peft"]


def test_a_lock_that_is_not_closed():
    f = about(judge(sf.locked("my-app", "1.0", ("accelerate>=1",)), sf.locked("accelerate", "0.9")), "my-app")
    assert f.status is Status.FAIL
    assert f.summary == (
        "the lock is not closed: my-app 1.0 (via my-app) requires accelerate>=1 and the lock has accelerate "
        "0.9; `import my_app` can fail"
    )
    assert f.evidence == ("via my-app", "accelerate>=1")
    assert f.fix == "add accelerate>=1 to the inputs (or drop my-app), then lock again"
    missing = about(judge(sf.locked("peft", "0.19.1", ("accelerate",))), "peft")
    assert "requires accelerate and accelerate is not in the lock" in missing.summary
    assert missing.fix == "add accelerate to the inputs (or drop peft), then lock again"


def test_a_direct_reference_in_the_lock_is_what_uv_resolved():
    url = "https://example.org/accelerate-0.9-py3-none-any.whl"
    found = judge(sf.locked("peft", "0.19.1", (f"accelerate @ {url}",)), sf.locked("accelerate", "0.9"))
    assert about(found, "closure").status is Status.PASS


def test_closed_lock_counts_requirements_and_packages():
    found = judge(
        sf.locked("peft", "0.19.1", ("accelerate>=1", "torch")),
        sf.locked("accelerate", "1.15.0"),
        profile=NGC,
    )
    assert about(found, "closure").summary == (
        "the resolved set is closed: 2 requirement(s) of 2 package(s), markers evaluated for the target and "
        "extras followed, are all met by the lock or the base"
    )


def test_no_closed_pass_when_something_is_unknown_or_unresolved():
    unknown = sf.locked("peft", "0.19.1")
    unknown.requires = None  # its metadata was not read
    assert not [f for f in judge(unknown) if f.subject == "closure"]
    assert not [f for f in judge() if f.subject == "closure"]
    # a requirement uv could not resolve, or one whose build failed: said by unresolved.py or G2, once
    gone = Unresolved("accelerate", "version", "", "no release in range")
    found = judge(sf.locked("peft", "0.19.1", ("accelerate>=99",)), unresolved=(gone,))
    assert not [f for f in found if f.subject in ("closure", "peft")]
    assert about(found, "accelerate").status is Status.FAIL
    built = BuildFailure("accelerate", "1.0", "build", "error: no compiler")
    assert not [
        f
        for f in judge(sf.locked("peft", "0.19.1", ("accelerate",)), build_failures=(built,))
        if f.subject in ("closure", "peft")
    ]


def test_hash_mismatch_names_both_digests():
    m = HashMismatch("peft-0.19.1-py3-none-any.whl", "u", "ab" * 32, "cd" * 32)
    f = about(judge(sf.locked("peft", "0.19.1"), hash_mismatches=(m,)), m.file)
    assert f.evidence == (m.file, f"expected sha256:{'ab' * 32}", f"served sha256:{'cd' * 32}")
    assert f.summary.endswith("; a lock pinning that hash can never install")
    assert f.fix == (
        "the index serves bytes that do not match its own hash: use another index or mirror, or report it to "
        "the index's operator"
    )


def test_unreadable_metadata_and_invalid_requirements_are_errors():
    problems = (
        MetadataProblem("peft", "0.19.1", "peft-0.19.1-py3-none-any.whl", reason="HTTP 404"),
        MetadataProblem("trl", "1.0", "trl-1.0-py3-none-any.whl", invalid=("torch>=>2", "x[")),
    )
    found = judge(sf.locked("peft", "0.19.1"), sf.locked("trl", "1.0"), metadata_problems=problems)
    peft = about(found, "peft")
    assert peft.status is Status.ERROR
    assert peft.summary == (
        "cannot read the metadata of peft-0.19.1-py3-none-any.whl (peft 0.19.1): HTTP 404; its requirements "
        "cannot be checked, so no lock is written"
    )
    assert peft.evidence == ("peft-0.19.1-py3-none-any.whl",)
    assert peft.fix == "make the index serve the file (or its PEP 658 .metadata), then lock again"
    trl = [f for f in found if f.subject == "trl"]
    assert [(f.status, f.summary, f.fix) for f in trl] == [
        (
            Status.ERROR,
            "trl-1.0-py3-none-any.whl: Requires-Dist 'torch>=>2' is not a valid requirement; "
            "trl-1.0-py3-none-any.whl: Requires-Dist 'x[' is not a valid requirement",
            None,
        )
    ]


def test_no_deps_stage_names_what_the_lock_lacks():
    found = judge(
        sf.locked("unsloth", "2025.11.1", ("zoo>=1", "accelerate", "torch", "peft"), stage="nodeps"),
        sf.locked("peft", "0.19.1", ("xformers",)),
        profile=NGC,
        no_deps_stage="nodeps",
    )
    f = [
        f
        for f in g9_resolved.resolved(
            sf.resolved(
                sf.locked("unsloth", "2025.11.1", ("zoo>=1", "accelerate", "torch", "peft"), stage="nodeps"),
                sf.locked("peft", "0.19.1", ("xformers",)),
                profile=NGC,
                no_deps_stage="nodeps",
            )
        )
        if f.status is Status.INFO
    ]
    assert [(x.subject, x.summary, x.evidence) for x in f] == [
        (
            "unsloth",
            "unsloth 2025.11.1 is installed --no-deps; not in the lock: accelerate, zoo",
            ("accelerate", "zoo"),
        )
    ]
    assert not [f for f in found if f.subject == "peft" and f.status is Status.INFO]
    whole = sf.locked("unsloth", "2025.11.1", ("peft",), stage="nodeps")
    assert not [
        f for f in judge(whole, sf.locked("peft", "0.19.1"), no_deps_stage="nodeps") if f.subject == "unsloth"
    ]
    assert not [
        f
        for f in judge(sf.locked("unsloth", "1", stage="nodeps"), no_deps_stage="nodeps")
        if f.status is Status.INFO
    ]


def _fallback(**kw):
    fields = {
        "key": "pyfoo",
        "version": "1.0",
        "newest": "3.0",
        "gap_days": 900,
        "newer_minor": True,
        "user_capped": False,
        "caps": ("app → pyfoo<2",),
        "reasons": (),
    }
    fb = FallbackFacts(**{**fields, **kw})
    return judge(
        sf.locked("app", "1.0", ("pyfoo",)), sf.locked("pyfoo", "1.0"), roots=("app",), fallbacks=(fb,)
    )


def test_fallback_texts():
    f = about(_fallback(), "pyfoo")
    assert f.summary == (
        "pyfoo 1.0 (via app → pyfoo) is a fallback: the newest release is 3.0, 2 year(s) older; why: "
        "app → pyfoo<2 excludes 3.0"
    )
    assert f.evidence == ("newest 3.0", "app → pyfoo<2")
    assert f.fix == "pin pyfoo to the release you want, or choose a profile it has wheels for"
    two = about(_fallback(caps=("a → pyfoo<2", "b → pyfoo<3"), gap_days=None), "pyfoo")
    assert two.summary.endswith("the newest release is 3.0; why: a → pyfoo<2; b → pyfoo<3 exclude 3.0")
    year = about(_fallback(gap_days=400), "pyfoo")
    assert "the newest release is 3.0, 1 year(s) older; why" in year.summary
    reasons = about(_fallback(caps=(), reasons=("no wheel for aarch64", "needs Python 3.13")), "pyfoo")
    assert reasons.summary.endswith("why: no wheel for aarch64; needs Python 3.13")
    neither = about(_fallback(caps=(), gap_days=None), "pyfoo")
    assert neither.summary.endswith("3.0; why: a requirement of it cannot be met with the rest")


def test_what_is_no_fallback():
    limit = g9_resolved.packages().fallback_days
    assert about(_fallback(gap_days=limit), "pyfoo").status is Status.WARN
    assert not [f for f in _fallback(gap_days=limit - 1) if f.subject == "pyfoo"]
    assert not [f for f in _fallback(user_capped=True) if f.subject == "pyfoo"]
    assert not [f for f in _fallback(gap_days=None, newer_minor=False) if f.subject == "pyfoo"]
    assert g9_resolved.is_fallback(None, True, limit) and not g9_resolved.is_fallback(0, True, limit)


def test_allow_replace_of_a_provider_keeps_its_other_name_judged_by_its_version():
    """--allow-replace pytorch-triton keeps `triton` out of resolution (resolve/resolved.py's kept_out):
    a requirement on triton that the base's version does not meet is not said to be provided by the base."""
    allowed = frozenset({"pytorch-triton"})
    kept_out = tuple(n for n in profiles.load(NGC).excluded() if n not in allowed)
    ranged = judge(
        sf.locked("app", "1.0", ("triton>=3.9",)), profile=NGC, allow_replace=allowed, excluded_names=kept_out
    )
    assert not [f for f in ranged if f.subject == "triton"]
    plain = judge(
        sf.locked("app", "1.0", ("triton",)), profile=NGC, allow_replace=allowed, excluded_names=kept_out
    )
    assert (
        about(plain, "triton").summary
        == f"app → triton excluded: provided by the base (pytorch-triton {TRITON})"
    )


def test_requirements_of_a_package_uv_could_not_build_still_count():
    """resolve/resolved.py adds the Requires-Dist of what failed to build to the graph: its unmet
    requirement is said, named without a locked version (it has none)."""
    from packaging.requirements import Requirement

    from sparkenv.facts import graph

    facts = sf.resolved(sf.locked("app", "1.0", ("mypkg",)), roots=("app",))
    requires = {"app": [Requirement("mypkg")], "mypkg": [Requirement("accelerate>=1")]}
    edges = tuple(graph.edges(requires, facts.profile.marker_env()))
    built = BuildFailure("mypkg", "0.3", "build", "error: no compiler")
    found = g9_resolved.resolved(dataclasses.replace(facts, edges=edges, build_failures=(built,)))
    f = about(merge_by_subject(found), "mypkg")
    assert f.summary == (
        "the lock is not closed: mypkg (via app → mypkg) requires accelerate>=1 and accelerate is not in the "
        "lock; `import mypkg` can fail"
    )
    assert not [x for x in found if x.subject in ("app", "closure")]  # mypkg's own failure is G2's to say

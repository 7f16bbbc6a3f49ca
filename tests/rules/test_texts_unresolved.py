"""rules/unresolved.py, rules/replaced.py, rules/unsloth.py and rules/wrong_cpu.py in-process: the FAIL a
requirement uv found no versions for gets (which G-number owns each of uv's reasons, the words, the fix
for each kind and the nearest release with a wheel), the INFO a pin on a base package becomes under
--allow-replace, the Unsloth family's one definition, and the shared objects of another CPU. uv's own
words are driven for real in tests/lock; here the facts are given as lock/uvdriver.py hands them."""

from __future__ import annotations

import stage_facts as sf

from sparkenv.core.report import Finding, GotchaId, Status
from sparkenv.facts.resolved import Unresolved
from sparkenv.rules import replaced, unresolved, unsloth, wrong_cpu

TARGET = "aarch64-manylinux_2_39"  # spark-bare's python_platform (data/profiles/spark-bare.toml)


def facts(*unres, locked=True, chain=False):
    pkgs = [sf.locked("app", "1.0", ("lib",))] if locked else []
    return sf.resolved(*pkgs, roots=("app",) if chain else None, unresolved=tuple(unres))


def said(u, **kw):
    f = facts(u, **kw)
    found = unresolved.findings(f, GotchaId.G1) + unresolved.findings(f, GotchaId.G9)
    assert len(found) == 1, found
    return found[0]


def test_each_reason_belongs_to_one_gotcha():
    for kind in ("platform", "abi", "python"):
        assert said(Unresolved("lib", kind, "1.0", "c")).id is GotchaId.G1, kind
    for kind in ("version", "conflict", "not-found", "refused", "unknown", "something uv says one day"):
        assert said(Unresolved("lib", kind, "1.0", "c")).id is GotchaId.G9, kind
    assert unresolved.keys(
        facts(Unresolved("lib", "version", "", "c"), Unresolved("", "unknown", "", "c"))
    ) == {"lib"}


def test_each_gotchas_rule_reports_only_its_own_reasons():
    """G1's rule says the file that does not fit, G9's the set that does not close: each once, not both."""
    f = facts(Unresolved("lib", "platform", "2.0", "c"), Unresolved("other", "conflict", "", "c"))
    assert [(x.id, x.subject) for x in unresolved.findings(f, GotchaId.G1)] == [(GotchaId.G1, "lib")]
    assert [(x.id, x.subject) for x in unresolved.findings(f, GotchaId.G9)] == [(GotchaId.G9, "other")]


def test_no_wheel_for_the_target_names_where_wheels_exist_and_the_nearest_release():
    u = Unresolved(
        "lib",
        "platform",
        "2.0",
        "lib==2.0 has no wheels with a matching platform tag",
        platforms="macosx_11_0_arm64, win_amd64",
        nearest="1.9",
    )
    f = said(u, chain=True)
    assert (f.status, f.subject) == (Status.FAIL, "lib")
    assert f.summary == (
        f"lib 2.0 (via app → lib): no wheel of it fits {TARGET} and it has no sdist (wheels of 2.0 exist for "
        "macosx_11_0_arm64, win_amd64) — uv: lib==2.0 has no wheels with a matching platform tag; the rest "
        "was resolved without it"
    )
    assert f.evidence == ("via app → lib", "wheels for macosx_11_0_arm64, win_amd64")
    assert f.fix == (
        f"require lib==1.9, the nearest release with a wheel for {TARGET} (its requirement comes from app: "
        "pick a app release that accepts it)"
    )


def test_words_for_each_reason():
    for kind, why in [
        ("abi", "no wheel of it fits the target's Python (3.12.3) ABI and it has no sdist"),
        ("python", "it requires another Python than the target's 3.12.3"),
        ("version", "no release of it is in the range asked"),
        ("conflict", "the requirements on it conflict"),
        ("not-found", "the index serves no project of that name"),
        ("refused", "the index refused to answer for it"),
        ("unknown", "no set of versions satisfies the inputs"),
        ("new", "no set of versions satisfies the inputs"),
    ]:
        f = said(Unresolved("lib", kind, "", "because"), locked=False)
        assert f.summary == f"lib (via lib): {why} — uv: because", kind
        assert f.evidence == ("via lib",)


def test_no_wheels_elsewhere_said_with_it_when_no_release_is_named():
    f = said(Unresolved("lib", "platform", "", "c", platforms="win_amd64"), locked=False)
    assert (
        f.summary
        == f"lib (via lib): no wheel of it fits {TARGET} and it has no sdist (wheels of it exist for "
        "win_amd64) — uv: c"
    )


def test_the_fix_for_each_kind():
    def fix(**kw):
        return said(Unresolved("lib", **{"tried": "", "cause": "c", **kw}), chain=True).fix

    assert fix(kind="refused") == (
        "give sparkenv the index's credentials (in the index URL or a netrc) or use an index that serves "
        "lib, then lock again"
    )
    assert fix(kind="not-found") == (
        "check the name lib, or add the index that serves it (--extra-index-url), then lock again"
    )
    assert fix(kind="platform") == (
        f"choose a lib release that has a wheel for {TARGET} (the index page could not be read)"
    )
    assert fix(kind="platform", releases_read=True) == (
        f"no release of lib on the index has a wheel for {TARGET}: drop it (its requirement comes from app: "
        "pick a app release that accepts it), build it on the Spark, or use an image that ships it"
    )
    direct = said(Unresolved("lib", "platform", "", "c", releases_read=True), locked=False).fix
    assert direct == (
        f"no release of lib on the index has a wheel for {TARGET}: drop it, build it on the Spark, or use an "
        "image that ships it"
    )
    assert unresolved.fix(Unresolved("x", "platform", "", "c", nearest="2"), "x", TARGET) == (
        f"require x==2, the nearest release with a wheel for {TARGET}"
    )


def test_uv_names_no_one_package():
    f = said(Unresolved("", "unknown", "", "because a and b conflict"))
    assert (f.id, f.subject, f.evidence) == (GotchaId.G9, "resolution", ())
    assert f.summary == f"no set of versions satisfies the inputs for {TARGET}: because a and b conflict"
    assert f.fix == "change the requirements uv names in its reasoning above, then lock again"


# --- rules/replaced.py -----------------------------------------------------------------------------------


def test_a_base_pin_replaced_on_purpose_is_an_info():
    fail = Finding(
        GotchaId.G9,
        Status.FAIL,
        "torch==2.9.1 (r.txt:1) would replace the base's torch",
        "torch",
        ("r.txt:1",),
        "drop the pin",
    )
    [got] = replaced.replaced_on_purpose([fail], frozenset({"torch"}))
    assert (got.id, got.status, got.subject, got.evidence, got.fix) == (
        GotchaId.G9,
        Status.INFO,
        "torch",
        ("r.txt:1",),
        None,
    )
    assert got.summary == (
        "torch==2.9.1 (r.txt:1) would replace the base's torch — replaced on purpose (--allow-replace "
        "torch); resolved like any package"
    )
    g2 = Finding(GotchaId.G2, Status.FAIL, "flash-attn pinned", "flash-attn")
    assert replaced.replaced_on_purpose([g2], frozenset({"flash-attn"}))[0].status is Status.INFO
    kept = [
        fail,  # not allowed
        Finding(GotchaId.G1, Status.FAIL, "torch cu128", "torch"),  # another gotcha's FAIL stands
        Finding(GotchaId.G9, Status.WARN, "torch unpinned", "torch"),  # only a FAIL is softened
    ]
    assert replaced.replaced_on_purpose(kept, frozenset({"numpy"})) == kept
    assert replaced.replaced_on_purpose(kept[1:], frozenset({"torch"})) == kept[1:]


# --- rules/unsloth.py, rules/wrong_cpu.py ----------------------------------------------------------------


def test_the_unsloth_family():
    assert unsloth.family()[0] == "unsloth" and "unsloth-zoo" in unsloth.family()
    assert unsloth.is_member("unsloth-zoo") and not unsloth.is_member("unsloth_zoo")
    assert unsloth.installed(iter(["peft", "unsloth-zoo", "unsloth"])) == "unsloth"
    assert unsloth.installed(["unsloth-zoo"]) == "unsloth-zoo" and unsloth.installed([]) is None


def test_shared_objects_of_another_cpu(ctx):
    """An x86_64 build and an aarch64 one in one distribution of an aarch64 environment (real ELF files)."""
    env = ctx.env("aarch64")
    env.add(
        "mixed",
        "1.0",
        files={
            "mixed/_x86.so": ctx.elves.linked(("libc.so.6",), arch="x86_64"),
            "mixed/_arm.so": ctx.elves.linked(("libc.so.6",), arch="aarch64"),
            "mixed/_x86b.so": ctx.elves.linked(("libm.so.6",), arch="x86_64"),
        },
    )
    df = sf.installed(ctx, "aarch64").dists["mixed"]
    wrong = wrong_cpu.shared_objects(df, "aarch64")
    assert sorted(so.relpath for so in wrong) == ["mixed/_x86.so", "mixed/_x86b.so"]
    assert [so.info.machine for so in wrong] == ["x86_64", "x86_64"]
    assert len(wrong_cpu.shared_objects(df, "x86_64")) == 1

"""rules/g9_declared.py (G9 at check): the words each verdict gives and the edges where they change — a pin
on what the base provides against its exact NGC version (`2.10.0a0+b558c986e8.nv25.11`, a pre-release of
2.10 from data/profiles/ngc-25.11.toml: `torch>=2.9` keeps it, `torch>=2.10` replaces it), the base's
other names (triton → pytorch-triton), a version the profile does not record, drift-prone pins, the
Unsloth family, editable/VCS/path lines, and check's offline note. Each row is a requirements file read by
resolve/inputs.py as `sparkenv check` reads it (stage_facts.declared)."""

from __future__ import annotations

import dataclasses

import stage_facts as sf

from sparkenv.core.report import GotchaId, Status
from sparkenv.environment import profiles
from sparkenv.rules import g9_declared

NGC = profiles.load("ngc-25.11")
TORCH = NGC.provides["torch"]
DROP_PIN = "drop the pin (the base's torch is kept out of resolution), or pick a profile whose base has it"
NO_DEPS = (
    "install the Unsloth family in a second stage with pip install --no-deps (mark that file "
    "`# sparkenv: no-deps`), or install from the lock `sparkenv lock` writes"
)


def judge(ctx, text, profile="ngc-25.11", **kw):
    facts = sf.declared(ctx, text, profile, **kw)
    found = g9_declared.declared(facts)
    assert all(f.id is GotchaId.G9 for f in found)
    return found, str(ctx.tmp_path / "requirements.txt")


def one(found, subject):
    mine = [f for f in found if f.subject == subject]
    assert len(mine) == 1, found
    return mine[0]


def test_ngc_torch_kept_by_a_range_that_takes_its_pre_release(ctx):
    found, req = judge(ctx, "torch>=2.9\n")
    f = one(found, "torch")
    assert (f.status, f.fix) == (Status.PASS, None)
    assert f.summary == f"torch>=2.9 is provided by the base (torch {TORCH}); excluded from resolution"
    assert f.evidence == (f"{req}:1",)


def test_a_range_above_the_ngc_pre_release_replaces_it(ctx):
    found, req = judge(ctx, "torch>=2.10\n")
    f = one(found, "torch")
    assert f.status is Status.FAIL
    assert f.summary == f"torch>=2.10 ({req}:1) would replace the base's torch {TORCH}"
    assert f.fix == DROP_PIN == g9_declared.base_pin_fix("torch")


def test_a_bare_name_is_left_to_the_base(ctx):
    found, _ = judge(ctx, "triton\n")
    f = one(found, "triton")
    assert f.status is Status.PASS
    assert (
        f.summary == f"triton is provided by the base (pytorch-triton {NGC.provides['pytorch-triton']}); "
        "excluded from resolution"
    )


def test_a_direct_reference_replaces_the_base(ctx):
    url = "https://example.org/torch-2.9.1-cp312-cp312-manylinux_2_28_aarch64.whl"
    found, req = judge(ctx, f"torch @ {url}\n")
    said, f = sorted((x for x in found if x.subject == "torch"), key=lambda x: x.status is Status.FAIL)
    assert said.status is Status.INFO and "is a path/URL requirement" in said.summary
    assert f.status is Status.FAIL
    assert f.summary == f"torch @ {url} ({req}:1) would replace the base's torch {TORCH}"
    assert f.fix == f"drop it: {NGC.image} provides torch"


def test_a_version_the_profile_does_not_record(ctx):
    """ngc-25.10 records no torchvision version (UNVERIFIED)."""
    found, req = judge(ctx, "torchvision>=0.20\n", "ngc-25.10")
    f = one(found, "torchvision")
    assert f.status is Status.WARN
    assert f.summary.startswith(
        f"torchvision>=0.20 ({req}:1): the base provides torchvision but its version is not recorded in "
    )
    assert f.summary.endswith("ngc-25.10.toml; cannot tell whether it would be replaced")
    assert f.fix == "record provides.torchvision in the profile, or drop the pin"
    bare = one(judge(ctx, "torchvision\n", "ngc-25.10")[0], "torchvision")
    assert bare.summary == "torchvision is provided by the base (torchvision); excluded from resolution"


def test_a_cuda_compiling_package_the_base_provides_is_left_to_g2(ctx):
    found, _ = judge(ctx, "flash-attn==2.8.3\n")
    assert not [f for f in found if f.subject == "flash-attn"]


def test_drift_prone_pins(ctx):
    found, req = judge(ctx, "transformers==4.56.2\nxformers>=0.0.30\n", "spark-bare")
    exact = one(found, "transformers")
    assert (exact.status, exact.summary) == (Status.PASS, f"transformers pinned exactly (4.56.2, {req}:1)")
    assert exact.evidence == (f"{req}:1",)
    loose = one(found, "xformers")
    assert (loose.status, loose.evidence) == (Status.WARN, (f"{req}:2",))
    assert loose.summary == (
        f"xformers>=0.0.30 ({req}:2) is not pinned exactly: xformers is drift-prone (torch, triton, xformers "
        "and transformers must move together)"
    )
    assert loose.fix == "pin xformers==<version>, or install from the lock `sparkenv lock` writes"
    bare = one(judge(ctx, "transformers\n", "spark-bare")[0], "transformers")
    assert bare.summary.startswith(f"transformers ({req}:1) is not pinned exactly")
    staged = judge(ctx, "transformers>=4\n", "spark-bare", staged=True)[0]
    assert not [f for f in staged if f.subject == "transformers"]  # the lock pins every package


def test_unsloth_with_its_dependencies_over_ngc_torch(ctx):
    found, req = judge(ctx, "unsloth\n")
    f = one(found, "unsloth")
    assert f.status is Status.FAIL and f.fix == NO_DEPS
    assert f.summary == (
        f"unsloth ({req}:1) is installed with its dependencies: its dependencies replace the base's torch "
        f"{TORCH} with a PyPI build (unslothai/notebooks#132)"
    )


def test_unsloth_on_a_bare_profile_is_a_warn(ctx):
    f = one(judge(ctx, "unsloth-zoo\n", "spark-bare")[0], "unsloth-zoo")
    assert f.status is Status.WARN and f.fix == NO_DEPS
    assert f.summary.endswith(
        "is installed with its dependencies: its dependencies move torch, triton and xformers"
    )


def test_unsloth_staged_or_in_a_no_deps_file(ctx):
    staged = one(judge(ctx, "unsloth\n", staged=True)[0], "unsloth")
    assert staged.summary == (
        "unsloth goes into its own --no-deps stage after the rest, as `sparkenv lock` installs it (a plain "
        "pip install -r of this file would not: `sparkenv check --pip`)"
    )
    found, req = judge(ctx, "# sparkenv: no-deps\nunsloth\n")
    f = one(found, "unsloth")
    assert (f.status, f.summary) == (Status.PASS, f"unsloth ({req}:2) is in a --no-deps stage")


def test_lines_known_only_once_built(ctx):
    text = "-e ./mypkg\nfoo @ git+https://github.com/a/b.git\nbar @ file:///tmp/bar\n"
    found, req = judge(ctx, text, "spark-bare")
    tail = "its version and requirements are known only once it is built; "
    editable = [f for f in found if f.summary.startswith("-e ")]
    assert len(editable) == 1 and editable[0].status is Status.INFO
    assert editable[0].summary.endswith(
        f"({req}:1) is an editable requirement: {tail}it has no name: nothing about it is judged before "
        "install (`sparkenv lock` reads what it builds)"
    )
    vcs = one(found, "foo")
    assert vcs.summary == (
        f"foo @ git+https://github.com/a/b.git ({req}:2) is a VCS requirement: {tail}judged by its name foo "
        "only before install (`sparkenv lock` reads what it builds)"
    )
    assert vcs.evidence == (f"{req}:2",)
    assert "is a path/URL requirement" in one(found, "bar").summary
    skipped = judge(ctx, "foo @ git+https://github.com/a/b.git ; sys_platform == 'win32'\n", "spark-bare")[0]
    assert not [f for f in skipped if f.subject == "foo"]


def test_offline_check_says_what_it_leaves_to_lock(ctx):
    facts = dataclasses.replace(sf.declared(ctx, "peft\n", "spark-bare"), offline=True)
    f = one(g9_declared.declared(facts), "resolution")
    assert f.status is Status.INFO
    assert f.summary == (
        "offline, check sees the declared requirements only: what their dependencies ask of the base's "
        "versions, CPU-only builds, what a --no-deps stage misses and old fallbacks need the index; "
        "`sparkenv lock` decides those"
    )
    assert not [x for x in judge(ctx, "peft\n", "spark-bare")[0] if x.subject == "resolution"]


def test_every_verdict_on_a_base_pin_names_its_line(ctx):
    """The evidence of a base pin's FAIL and WARN is the line that asks for it: what the user edits."""
    url = "https://example.org/torch-2.9.1-cp312-cp312-manylinux_2_28_aarch64.whl"
    found, req = judge(ctx, f"numpy\ntorch @ {url}\n")
    [f] = [x for x in found if x.subject == "torch" and x.status is Status.FAIL]
    assert f.evidence == (f"{req}:2",)
    assert one(judge(ctx, "torch>=2.10\n")[0], "torch").evidence == (f"{req}:1",)
    unrecorded = one(judge(ctx, "torchvision>=0.20\n", "ngc-25.10")[0], "torchvision")
    assert unrecorded.evidence == (f"{req}:1",)


def test_every_unsloth_verdict_names_its_line(ctx):
    staged = one(judge(ctx, "peft\nunsloth\n", staged=True)[0], "unsloth")
    assert staged.status is Status.PASS
    req = str(ctx.tmp_path / "requirements.txt")
    assert staged.evidence == (f"{req}:2",)
    no_deps = one(judge(ctx, "# sparkenv: no-deps\nunsloth\n")[0], "unsloth")
    assert no_deps.evidence == (f"{req}:2",)
    with_deps = one(judge(ctx, "unsloth\n")[0], "unsloth")
    assert with_deps.evidence == (f"{req}:1",)


def test_a_wheel_url_with_a_local_version_is_a_path_url_not_vcs(ctx):
    """Only the scheme says VCS (git+https): a '+' later in the URL (a local version, +cu130) does not."""
    url = "https://example.org/wheels/foo-1.0+cu130-py3-none-any.whl"
    found, req = judge(ctx, f"foo @ {url}\n", "spark-bare")
    f = one(found, "foo")
    assert f.summary.startswith(f"foo @ {url} ({req}:1) is a path/URL requirement: ")


def test_a_source_line_after_plain_ones_is_still_said(ctx):
    """Plain and marker-excluded lines before an editable one do not end the walk."""
    text = "peft==0.17.1\nfoo @ git+https://github.com/a/b.git ; sys_platform == 'win32'\n-e ./mypkg\n"
    found, req = judge(ctx, text, "spark-bare")
    editable = [f for f in found if f.summary.startswith("-e ")]
    assert len(editable) == 1 and editable[0].evidence == (f"{req}:3",)

"""rules/g2.py beyond its table rows: the exact texts a user reads (what replaced the base's build, where
flash-attn came from, what an sdist builds, why uv could not build a package) and the fix each one gives,
on real requirements files, real installed environments with compiled ELF files and shipped profiles."""

from __future__ import annotations

import stage_facts as sf

from sparkenv.core.report import Status
from sparkenv.facts.override import OverrideFacts
from sparkenv.facts.resolved import BuildFailure, SdistBuild
from sparkenv.rules import g2

NGC_FA = "2.7.4.post1+25.11"  # the flash-attn of nvcr.io/nvidia/pytorch:25.11-py3 (data/profiles)
DROP = (
    "pip uninstall flash-attn and use SDPA, or use the NGC image's flash-attn (never pip install flash-attn "
    "on a Spark: it compiles for an hour)"
)


def _one(findings, subject):
    mine = [f for f in findings if f.subject == subject]
    assert len(mine) == 1, findings
    return mine[0]


# --- Stage.DECLARED ----------------------------------------------------------------------------------


def test_the_base_flash_attn_passes_naming_its_version_and_image(ctx):
    f = _one(g2.declared(sf.declared(ctx, "flash-attn\n", "ngc-25.11")), "flash-attn")
    assert f.status is Status.PASS
    assert f.summary == (
        "flash-attn is provided by the base (flash-attn 2.7.4.post1+25.11, "
        "nvcr.io/nvidia/pytorch:25.11-py3); excluded from resolution, nothing compiles"
    )
    assert len(f.evidence) == 1 and f.evidence[0].endswith("requirements.txt:1"), f
    # a base whose flash-attn version the data does not record: still the base's, said so
    f = _one(g2.declared(sf.declared(ctx, "flash-attn\n", "ngc-26.03")), "flash-attn")
    assert f.status is Status.PASS and "(flash-attn version not recorded, " in f.summary
    # a range that holds the base's NGC-labelled version
    f = _one(g2.declared(sf.declared(ctx, "flash-attn>=2.7\n", "ngc-25.11")), "flash-attn")
    assert f.status is Status.PASS


def test_another_flash_attn_than_the_base_fails_with_what_it_costs(ctx):
    f = _one(g2.declared(sf.declared(ctx, "flash-attn==2.8.3\n", "ngc-25.11")), "flash-attn")
    assert f.status is Status.FAIL
    assert f.summary.startswith("flash-attn==2.8.3 (")
    assert (
        "is not the base's flash-attn 2.7.4.post1+25.11: installing it replaces a working build" in f.summary
    )
    assert f.fix == (
        "drop the requirement and use the base's flash-attn, or require flash-attn==2.7.4.post1+25.11"
    )
    url = "https://github.com/Dao-AILab/flash-attention/archive/refs/tags/v2.8.3.tar.gz"
    f = _one(g2.declared(sf.declared(ctx, f"flash-attn @ {url}\n", "ngc-25.11")), "flash-attn")
    assert f.status is Status.FAIL and f"flash-attn @ {url} (" in f.summary


def test_a_direct_wheel_is_left_to_its_tags(ctx):
    url = "https://example.invalid/flash_attn-2.8.3-cp312-cp312-linux_aarch64.whl"
    assert g2.declared(sf.declared(ctx, f"flash-attn @ {url}\n")) == []


def test_no_wheel_upstream_on_a_bare_spark_names_the_profiles_and_sdpa(ctx):
    f = _one(g2.declared(sf.declared(ctx, "flash-attn==2.8.3\n")), "flash-attn")
    assert f.status is Status.FAIL
    assert "has no aarch64 wheel upstream: pip compiles its CUDA code from the sdist" in f.summary
    assert f.summary.endswith("on spark-bare")
    # the last shipped profile whose base provides it, and SDPA; no torch in the base: no build-once advice
    assert f.fix == "use a profile whose base provides it (--profile unsloth-dgx-spark); drop it and use SDPA"


def test_source_fix_fits_the_package_and_the_profile():
    from sparkenv.environment import profiles

    ngc = profiles.load("ngc-25.11")
    assert g2.source_fix("mamba-ssm", "2.2.4", ngc) == (
        "pin a mamba-ssm release that has a wheel for aarch64, or drop it; build it once in your image "
        "against the base's torch (pip install --no-build-isolation mamba-ssm==2.2.4)"
    )
    assert g2.source_fix("xformers", "", ngc).startswith(
        "use a profile whose base provides it (--profile unsloth-dgx-spark); pin a xformers release"
    )
    assert g2.source_fix("xformers", "", ngc).endswith("(pip install --no-build-isolation xformers)")
    # the profile in use is never the one suggested
    unsloth = profiles.load("unsloth-dgx-spark")
    assert "--profile unsloth-dgx-spark" not in g2.source_fix("flash-attn", "", unsloth)


def test_xformers_on_x86_64_has_wheels_and_on_aarch64_compiles(ctx):
    f = _one(g2.declared(sf.declared(ctx, "xformers\n", platform="linux/x86_64")), "xformers")
    assert f.status is Status.PASS
    assert f.summary.endswith("has upstream wheels for x86_64; the lock verifies one is chosen")
    f = _one(g2.declared(sf.declared(ctx, "xformers\n")), "xformers")
    assert f.status is Status.FAIL and "has no aarch64 wheel upstream" in f.summary


# --- Stage.RESOLVED ----------------------------------------------------------------------------------


def test_an_sdist_says_what_its_build_files_show():
    for kind, words in [
        ("pure", ": a pure-Python build, nothing compiles"),
        ("optional", ": it compiles CUDA only when asked to, not by default"),
        ("native", ": native code that does not build against torch"),
        ("unknown", ": its build files could not be read"),
    ]:
        build = SdistBuild("pyfoo", kind, (f"pyproject.toml: {kind}",))
        facts = sf.resolved(sf.locked("pyfoo", "1.0", sdist_only=True), sdist_builds={"pyfoo": build})
        f = _one(g2.resolved(facts), "pyfoo")
        assert f.status is Status.WARN
        assert f.summary.endswith(f"it is built at install{words}"), f.summary
        assert "only an sdist (pyfoo-1.0.tar.gz) fits" in f.summary
        assert f.evidence[-1] == f"pyproject.toml: {kind}"
        assert f.fix == "prefer a version with a wheel for the target"
    plain = _one(g2.resolved(sf.resolved(sf.locked("pyfoo", "1.0", sdist_only=True))), "pyfoo")
    assert plain.summary.endswith("it is built at install")


def test_an_sdist_that_compiles_cuda_fails_with_its_evidence():
    build = SdistBuild("pyfoo", "cuda", ("setup.py: CUDAExtension", "pyproject.toml: torch", "third"))
    facts = sf.resolved(sf.locked("pyfoo", "1.0", sdist_only=True), sdist_builds={"pyfoo": build})
    f = _one(g2.resolved(facts), "pyfoo")
    assert f.status is Status.FAIL
    assert "compiles CUDA/C++ against torch (setup.py: CUDAExtension; pyproject.toml: torch)" in f.summary
    assert f.evidence[-3:] == build.evidence
    assert f.fix and f.fix.startswith("pin a pyfoo release that has a wheel for aarch64, or drop it")
    # packages.toml's known answer stands in when the sdist was not read
    known = g2.sdist_build(sf.resolved(sf.locked("apex", "0.1", sdist_only=True)), "apex")
    assert known is not None and known.kind == "cuda" and known.via == "packages.toml"


def _failed(bf: BuildFailure, **more):
    facts = sf.resolved(sf.locked("torch", "2.9.1"), **more, build_failures=(bf,))
    return _one(g2.resolved(facts), bf.key)


def test_a_build_failure_says_why_and_what_to_do():
    placeholder = _failed(
        BuildFailure(
            "nvidia-foo", "1.0", "build", "RuntimeError: download failed", index="https://pypi.ngc.nvidia.com"
        )
    )
    assert placeholder.status is Status.FAIL
    assert "a placeholder whose build downloads the real wheel from https://pypi.ngc.nvidia.com" in (
        placeholder.summary
    )
    assert placeholder.fix and placeholder.fix.startswith(
        "add `--extra-index-url https://pypi.ngc.nvidia.com`"
    )

    cuda = _failed(
        BuildFailure("flash-attn", "2.8.3", "build", "error: nvcc not found", "flash_attn-2.8.3.tar.gz")
    )
    assert (
        "its sdist compiles CUDA/C++ against torch (packages.toml: compiles CUDA at install)" in cuda.summary
    )
    assert cuda.summary.startswith("flash-attn 2.8.3 (via ")
    assert "uv could not build it for" in cuda.summary and "the rest was resolved without it" in cuda.summary
    assert (
        cuda.evidence[0] == "flash_attn-2.8.3.tar.gz"
        and "packages.toml: compiles CUDA at install" in cuda.evidence
    )
    assert cuda.fix and "drop it and use SDPA" in cuda.fix

    missing = _failed(
        BuildFailure("pyfoo", "1.0", "build", "ModuleNotFoundError: No module named 'torch.utils'")
    )
    assert "its build imports torch without declaring it" in missing.summary
    assert missing.fix == (
        "pin a pyfoo release that has a wheel for aarch64, or build it where torch is installed "
        "(pip install --no-build-isolation pyfoo==1.0)"
    )

    download = _failed(BuildFailure("pyfoo", "1.0", "download", "HTTP 404"))
    assert "a file it needs could not be downloaded" in download.summary
    assert download.fix and download.fix.startswith("make the file reachable from here")
    both = _failed(BuildFailure("pyfoo", "1.0", "download and build", "exit status 1"))
    assert "its build failed" in both.summary
    assert both.fix == "pin a pyfoo release that has a wheel for aarch64, or drop it"


# --- Stage.INSTALLED ---------------------------------------------------------------------------------


def _fa(ctx, version="2.8.3", arch="x86_64", so_arch=None, **add):
    env = ctx.env(arch)
    so = ctx.elves.linked(("libcudart.so.13",), arch=so_arch or arch)
    env.add("flash-attn", version, files={"flash_attn_2_cuda.cpython-312-linux-gnu.so": so}, **add)
    return _one(g2.installed(sf.installed(ctx, arch)), "flash-attn")


def test_origin_of_an_ngc_build_and_a_github_wheel(ctx):
    f = _fa(ctx, NGC_FA)
    assert f.status is Status.PASS
    assert f.summary == f"flash-attn {NGC_FA}, origin: NGC build 25.11; 1 shared object(s) fit x86_64"
    assert f.evidence[0] == "origin: NGC build 25.11"
    assert f.evidence[1].endswith("flash_attn_2_cuda.cpython-312-linux-gnu.so (x86_64)")


def test_origin_of_a_github_release_wheel(ctx):
    f = _fa(ctx, "2.8.3+cu13torch2.9cxx11abiTRUE")
    assert "origin: prebuilt wheel from the flash-attention GitHub releases" in f.summary


def test_origin_from_direct_url(ctx):
    f = _fa(ctx, direct_url={"url": "file:///src/flash-attention", "dir_info": {}})
    assert "origin: built here from a local source tree (file:///src/flash-attention)" in f.summary


def test_origin_from_a_wheel_url(ctx):
    url = "https://example.invalid/flash_attn-2.8.3-cp312-cp312-linux_x86_64.whl"
    assert f"origin: wheel from {url}" in _fa(ctx, direct_url={"url": url, "archive_info": {}}).summary


def test_origin_from_a_source_archive(ctx):
    url = "https://example.invalid/flash_attn-2.8.3.tar.gz"
    f = _fa(ctx, direct_url={"url": url, "archive_info": {}})
    assert f"origin: built here from the source archive {url}" in f.summary


def test_origin_from_wheel_tags(ctx):
    f = _fa(ctx, wheel_tag="cp312-cp312-linux_x86_64")
    assert (
        "origin: compiled here from the sdist, wheel tag cp312-cp312-linux_x86_64 (not manylinux)"
        in f.summary
    )


def test_origin_from_an_index_wheel(ctx):
    f = _fa(ctx)
    assert "origin: wheel from a package index (cp312-cp312-manylinux_2_28_x86_64)" in f.summary


def test_damaged_direct_url_falls_back_to_the_tags(ctx):
    env = ctx.env()
    info = env.add(
        "flash-attn", "2.8.3", files={"flash_attn_2_cuda.so": ctx.elves.linked(("libcudart.so.13",))}
    )
    (info / "direct_url.json").write_text("[1, 2")
    f = _one(g2.installed(sf.installed(ctx)), "flash-attn")
    assert "origin: wheel from a package index (" in f.summary
    (info / "direct_url.json").write_text("[1, 2]")
    assert (
        "origin: wheel from a package index (" in _one(g2.installed(sf.installed(ctx)), "flash-attn").summary
    )


def test_no_wheel_file_is_an_unknown_origin(ctx):
    env = ctx.env()
    info = env.add(
        "flash-attn", "2.8.3", files={"flash_attn_2_cuda.so": ctx.elves.linked(("libcudart.so.13",))}
    )
    (info / "WHEEL").unlink()
    f = _one(g2.installed(sf.installed(ctx)), "flash-attn")
    assert "origin: unknown origin (no WHEEL file)" in f.summary


def test_shared_objects_of_another_cpu_do_not_fit(ctx):
    f = _fa(ctx, NGC_FA, so_arch="aarch64")
    assert f.status is Status.FAIL
    assert "1 shared object(s) are aarch64, the environment is x86_64" in f.summary
    assert f.fix == DROP


def test_a_cuda_12_build_names_both_majors(ctx):
    env = ctx.env()
    so = ctx.elves.linked(("libcudart.so.12",))
    env.add("flash-attn", "2.8.3+cu12torch2.9cxx11abiTRUE", files={"flash_attn_2_cuda.so": so})
    f = _one(g2.installed(sf.installed(ctx)), "flash-attn")
    assert f.status is Status.FAIL and "built for CUDA 12, target is CUDA 13" in f.summary
    assert f.fix == DROP


def test_files_not_listed_warn_to_reinstall(ctx):
    f = _fa(ctx, NGC_FA, record=False)
    assert f.status is Status.WARN
    assert (
        f.summary
        == f"flash-attn {NGC_FA}: its files are not listed, fit not checked; origin: NGC build 25.11"
    )
    assert f.fix == "reinstall it with pip so its RECORD lists the files"


def test_unsloth_beside_a_working_flash_attn_without_the_override(ctx):
    env = ctx.env()
    env.add("flash-attn", NGC_FA, files={"flash_attn_2_cuda.so": ctx.elves.linked(("libcudart.so.13",))})
    env.add("unsloth", "2026.7.2")
    f = _one(g2.installed(sf.installed(ctx)), "unsloth")
    assert f.status is Status.WARN
    assert f.summary == (
        f"unsloth 2026.7.2 next to a working flash-attn {NGC_FA} without the SDPA override: Unsloth picks "
        'flash-attn and FastLanguageModel drops attn_implementation="sdpa"'
    )
    assert f.evidence[1] == "no sparkenv-sdpa.pth in the site folders"
    assert f.fix and f.fix.startswith("if you want SDPA: sparkenv patch sdpa --install (it sets the flag")
    assert "see `sparkenv explain G2`" in f.fix and f.fix.endswith(
        "if flash-attn is what you want, nothing to do"
    )
    # beside a flash-attn that does not fit, Unsloth cannot pick it: nothing to say about Unsloth
    other = ctx.env("aarch64")
    other.add(
        "flash-attn",
        NGC_FA,
        files={"flash_attn_2_cuda.so": ctx.elves.linked(("libcudart.so.12",), "aarch64")},
    )
    other.add("unsloth", "2026.7.2")
    assert not [f for f in g2.installed(sf.installed(ctx, "aarch64")) if f.subject == "unsloth"]


def test_unsloth_with_the_override_names_it(ctx):
    env = ctx.env()
    env.add("flash-attn", NGC_FA, files={"flash_attn_2_cuda.so": ctx.elves.linked(("libcudart.so.13",))})
    env.add("unsloth", "2026.7.2")
    (env.site / "sparkenv-sdpa.pth").write_text("import _sparkenv_sdpa\n")
    f = _one(g2.installed(sf.installed(ctx)), "unsloth")
    assert f.status is Status.PASS
    assert f.summary.startswith("unsloth 2026.7.2 next to flash-attn; the SDPA override is installed (")
    assert f.evidence[0].startswith("override: ") and f.evidence[0].endswith("sparkenv-sdpa.pth")


# --- Stage.LIVE --------------------------------------------------------------------------------------


def test_live_flash_attn_each_way():
    from sparkenv.rules.g2 import _live_flash_attn

    assert _live_flash_attn(None, True, deep=False).status is Status.INFO
    assert "the default gate does not call it (--deep runs a flash-attn call" in (
        _live_flash_attn(None, True, deep=False).summary
    )
    skip = _live_flash_attn(None, True)
    assert skip.status is Status.SKIP and skip.summary.endswith("was not tried (no GPU or no torch)")
    broken = _live_flash_attn({"importable": False, "error": "undefined symbol: _ZN3c10"}, True)
    assert broken.status is Status.FAIL
    assert broken.summary == "flash-attn is installed but does not import: undefined symbol: _ZN3c10"
    assert broken.fix == "pip uninstall flash-attn and use SDPA, or use the NGC image's flash-attn"
    # importable though not listed among the dists: judged, not passed as absent
    assert _live_flash_attn({"importable": True, "works": True, "version": "2.8.3"}, False).summary == (
        "flash-attn 2.8.3 runs on the GPU"
    )
    assert _live_flash_attn({"importable": False}, False).status is Status.PASS
    fails = _live_flash_attn(
        {"importable": True, "works": False, "version": "2.8.3", "error": "no kernel"}, True
    )
    assert fails.summary == "flash-attn 2.8.3 imports but fails on the GPU: no kernel"


def test_live_unsloth_evidence_and_dispatch():
    override = {"installed": True, "active": True, "mode": "sdpa", "dispatch": None, "leaks": [], "env": ""}
    stages = {"importable": True, "works": True, "version": "2.7.4.post1"}
    facts = sf.live_raw(
        "h200-live",
        torch__stages__flash=stages,
        torch__stages__sdpa_override=override,
        torch__stages__unsloth_import_error={"error": "No module named 'trl'"},
        dists={"torch": "2.9.1+cu130", "flash-attn": NGC_FA, "unsloth": "2026.7.2"},
        env={},
    )
    f = _one(g2.live(facts), "unsloth")
    assert f.status is Status.PASS
    assert f.summary == (
        "unsloth 2026.7.2: the SDPA override is active "
        "(Unsloth not imported: --import-unsloth checks its dispatch)"
    )
    assert f.evidence == ("installed: True", "mode: sdpa", "import unsloth failed: No module named 'trl'")


def test_live_unsloth_wanted_by_the_variable_alone():
    stages = {"importable": True, "works": True, "version": "2.7.4.post1"}
    facts = sf.live_raw(
        "h200-live",
        torch__stages__flash=stages,
        torch__stages__sdpa_override={},
        dists={"torch": "2.9.1+cu130", "flash-attn": NGC_FA, "unsloth": "2026.7.2"},
        env={"SPARKENV_SDPA": "1"},
    )
    f = _one(g2.live(facts), "unsloth")
    assert f.status is Status.FAIL
    assert f.summary.endswith(
        "SDPA is wanted but the override is not active: Unsloth will train with flash-attn"
    )
    assert f.fix == (
        "install sparkenv's SDPA override (sparkenv patch sdpa --install); keep SPARKENV_SDPA unset or 1"
    )
    blank = sf.live_raw(
        "h200-live",
        torch__stages__flash=stages,
        torch__stages__sdpa_override={},
        dists={"torch": "2.9.1+cu130", "flash-attn": NGC_FA, "unsloth": "2026.7.2"},
        env={"SPARKENV_SDPA": "  "},
    )
    f = _one(g2.live(blank), "unsloth")
    assert f.status is Status.INFO and "SPARKENV_SDPA switches" not in f.summary
    assert 'will use flash-attn (it overrides attn_implementation="sdpa"); for SDPA install the override' in (
        f.summary
    )


def test_live_no_unsloth_line_when_flash_attn_does_not_work():
    facts = sf.live_raw(
        "h200-live",
        torch__stages__flash={"importable": True, "works": False, "version": "2.7.4.post1", "error": "x"},
        dists={"torch": "2.9.1+cu130", "flash-attn": NGC_FA, "unsloth": "2026.7.2"},
    )
    assert [f.subject for f in g2.live(facts)] == ["flash-attn"]


# --- sparkenv patch sdpa -----------------------------------------------------------------------------


def _override(action="status", **changes) -> OverrideFacts:
    base = dict(
        action=action,
        site="/venv/lib/python3.12/site-packages",
        target="/venv/bin/python",
        pth="/venv/lib/python3.12/site-packages/sparkenv-sdpa.pth",
        module="/venv/lib/python3.12/site-packages/_sparkenv_sdpa.py",
        present=True,
        module_present=True,
        current=True,
        interpreter_found=True,
        verified=None,
        removed=(),
        source="/sparkenv/patches/_sparkenv_sdpa.py",
    )
    return OverrideFacts(**{**base, **changes})


SITE = "/venv/lib/python3.12/site-packages"


def test_override_status_each_way():
    f = g2.override_outcome(_override())
    assert f.status is Status.PASS and f.subject == f"{SITE}/sparkenv-sdpa.pth"
    assert f.summary == f"SDPA override installed in {SITE}; SPARKENV_SDPA=0 switches it off"
    absent = g2.override_outcome(_override(present=False))
    assert absent.status is Status.INFO and absent.summary == (
        f"SDPA override not installed in {SITE} (sparkenv patch sdpa --install to add it)"
    )
    orphan = g2.override_outcome(_override(module_present=False))
    assert orphan.status is Status.FAIL
    assert (
        orphan.summary
        == f"sparkenv-sdpa.pth in {SITE} names _sparkenv_sdpa.py, which is missing: override off"
    )
    assert orphan.fix == "sparkenv patch sdpa --install /venv/bin/python"
    old = g2.override_outcome(_override(current=False))
    assert old.status is Status.WARN and "from another sparkenv version" in old.summary
    assert old.fix == "sparkenv patch sdpa --install /venv/bin/python to refresh it"


def test_override_install_and_uninstall_outcomes():
    unverified = g2.override_outcome(_override("install"))
    assert unverified.status is Status.WARN
    assert unverified.summary.endswith("not verified: no interpreter found for it")
    assert (
        unverified.fix
        == "run that environment's python with SPARKENV_DEBUG=1 and check sparkenv-sdpa.pth loads"
    )
    ok = g2.override_outcome(_override("install", verified=(True, "loaded in a fresh interpreter")))
    assert ok.status is Status.PASS and f"installed in {SITE}: loaded in a fresh interpreter;" in ok.summary
    bad = g2.override_outcome(_override("install", verified=(False, "site folder not on sys.path")))
    assert bad.status is Status.FAIL
    assert bad.summary == f"SDPA override written to {SITE} but not active: site folder not on sys.path"
    assert bad.fix and bad.fix.endswith(f"then sparkenv patch sdpa --uninstall {SITE}")
    gone = g2.override_outcome(
        _override("uninstall", removed=(f"{SITE}/sparkenv-sdpa.pth", f"{SITE}/_sparkenv_sdpa.py"))
    )
    assert gone.status is Status.INFO
    assert gone.summary == f"SDPA override removed from {SITE} (sparkenv-sdpa.pth, _sparkenv_sdpa.py)"
    nothing = g2.override_outcome(_override("uninstall"))
    assert nothing.summary == f"SDPA override was not installed in {SITE}: nothing to remove"


def test_on_an_ngc_base_the_fix_builds_it_once_against_the_bases_torch(ctx):
    """A CUDA-compiling package the NGC base does not provide: the build-once advice names the pin the
    user asked for, or the bare name when none."""
    f = _one(g2.declared(sf.declared(ctx, "mamba-ssm\n", "ngc-25.11")), "mamba-ssm")
    assert f.status is Status.FAIL
    assert f.fix and f.fix.endswith("(pip install --no-build-isolation mamba-ssm)")
    f = _one(g2.declared(sf.declared(ctx, "mamba-ssm==2.2.4\n", "ngc-25.11")), "mamba-ssm")
    assert f.fix and f.fix.endswith("(pip install --no-build-isolation mamba-ssm==2.2.4)")
    bf = BuildFailure("mamba-ssm", "2.2.4", "build", "error: nvcc not found")
    facts = sf.resolved(sf.locked("torch", "2.9.1"), profile="ngc-25.11", build_failures=(bf,))
    f = _one(g2.resolved(facts), "mamba-ssm")
    assert f.fix and f.fix.endswith("(pip install --no-build-isolation mamba-ssm==2.2.4)")


def test_live_unsloth_names_the_dispatch_it_picks():
    stages = {"importable": True, "works": True, "version": "2.7.4.post1"}
    dists = {"torch": "2.9.1+cu130", "flash-attn": NGC_FA, "unsloth": "2026.7.2"}
    for override, words in [
        ({"installed": True, "active": True, "dispatch": "sdpa"}, "the SDPA override is active; "
         "Unsloth's dispatch picks sdpa"),
        ({"installed": True, "active": False, "dispatch": "flash_dense"}, "SDPA is wanted but the override "
         "is not active: Unsloth's dispatch picks flash_dense"),
    ]:  # fmt: skip
        facts = sf.live_raw(
            "h200-live",
            torch__stages__flash=stages,
            torch__stages__sdpa_override=override,
            dists=dists,
            env={},
        )
        f = _one(g2.live(facts), "unsloth")
        assert f.summary == f"unsloth 2026.7.2: {words}", f
        assert f"dispatch: {override['dispatch']}" in f.evidence

"""rules/g1_installed.py beyond its table rows: the audit's words and fixes for each way an installed
distribution is tied to CUDA (a chain through an extra, CUDA 12 residue beside CUDA 13, a library bundled
and never linked, a CPU-only build by class), the damaged metadata and files it could not check, and the
environment summary — on real installed environments whose shared objects gcc compiled."""

from __future__ import annotations

import stage_facts as sf

from sparkenv.core.report import Status
from sparkenv.cuda import rules
from sparkenv.rules import g1_installed


def _audit(ctx, *dists, arch="x86_64"):
    env = ctx.env(arch)
    for name, version, files, *requires in dists:
        env.add(name, version, requires=requires[0] if requires else (), files=files)
    return g1_installed.installed(sf.installed(ctx, arch))


def _one(findings, subject):
    mine = [f for f in findings if f.subject == subject]
    assert len(mine) == 1, findings
    return mine[0]


def _so(ctx, *needed, arch="x86_64"):
    return ctx.elves.linked(tuple(needed), arch)


def test_the_summary_says_what_was_read(ctx):
    found = _audit(
        ctx,
        ("torch", "2.11.0+cu130", {"torch/lib/libtorch_cuda.so": _so(ctx, "libcudart.so.13")}),
        ("numpy", "2.3.0", {"numpy/_core/_multiarray_umath.so": _so(ctx, "libm.so.6")}),
    )
    f = _one(found, "environment")
    assert f.status is Status.INFO
    assert f.summary == (
        "read 2 distributions and 2 shared objects; 1 tied to a CUDA major; environment x86_64, Python 3.12, "
        "target CUDA 13"
    )
    assert f.evidence[1].startswith("machine from ")
    assert any(e.startswith("site folder ") and e.endswith("site-packages") for e in f.evidence)
    assert f.evidence[-1] == f"CUDA rules reviewed {rules.reviewed()}"
    # nothing CUDA in numpy: no line about it
    assert not [x for x in found if x.subject == "numpy"]


def test_a_cuda_13_build_passes_naming_its_link(ctx):
    f = _one(
        _audit(ctx, ("torch", "2.11.0+cu130", {"torch/lib/libtorch_cuda.so": _so(ctx, "libcudart.so.13")})),
        "torch",
    )
    assert f.status is Status.PASS and f.fix is None
    assert f.summary.startswith("torch 2.11.0+cu130 needs CUDA 13: ")
    assert "(CUDA 13)" not in f.summary  # the major is said once


def test_a_cuda_12_library_pulled_through_an_extra_names_the_chain_and_fixes_the_puller_first(ctx):
    found = _audit(
        ctx,
        ("myapp", "1.0", None, ["ray[cgraph]"]),
        ("ray", "2.50.0", None, ['cupy-cuda12x; extra == "cgraph"']),
        ("cupy-cuda12x", "13.6.0", None),
    )
    f = _one(found, "cupy-cuda12x")
    assert f.status is Status.FAIL
    assert f.summary.startswith(
        "cupy-cuda12x 13.6.0 (via myapp → ray[cgraph] → cupy-cuda12x) needs CUDA 12: "
    )
    assert ", required by ray — target is CUDA 13" in f.summary
    assert f.fix == "fix ray first (it pulls cupy-cuda12x in), then pip uninstall cupy-cuda12x"


def test_cuda_12_residue_beside_cuda_13_packages(ctx):
    found = _audit(
        ctx,
        ("torch", "2.11.0+cu130", {"torch/lib/libtorch_cuda.so": _so(ctx, "libcudart.so.13")}),
        ("nvidia-cublas-cu12", "12.8.4.1", None),
    )
    f = _one(found, "nvidia-cublas-cu12")
    assert f.status is Status.WARN
    assert f.summary.startswith("nvidia-cublas-cu12 12.8.4.1 is CUDA 12 residue nobody installed requires (")
    assert f.summary.endswith(" next to CUDA 13 packages")
    assert f.fix == "pip uninstall nvidia-cublas-cu12"


def test_a_package_with_both_majors_says_so(ctx):
    files = {
        "mylib/_C.so": _so(ctx, "libcudart.so.12"),
        "mylib/_D.so": _so(ctx, "libcudart.so.13"),
    }
    f = _one(_audit(ctx, ("mylib", "1.0", files)), "mylib")
    assert f.status is Status.FAIL
    assert "needs CUDA 12: " in f.summary and "; also CUDA 13 evidence — target is CUDA 13" in f.summary


def test_a_library_bundled_and_never_linked_is_information(ctx):
    files = {
        "triton/backends/nvidia/lib/cupti/libcupti.so.12": ctx.elves.stub("libcupti.so.12"),
        "triton/_C/libtriton.so": _so(ctx, "libm.so.6"),
    }
    f = _one(_audit(ctx, ("triton", "3.5.0", files)), "triton")
    assert f.status is Status.INFO and f.fix is None
    assert f.summary == (
        "triton 3.5.0 bundles libcupti.so.12 (CUDA 12) that none of its shared objects links: loaded on "
        "demand if at all (e.g. by a profiler), not a binding"
    )


def test_many_shared_objects_cap_the_evidence(ctx):
    files = {f"mylib/_C{i}.so": _so(ctx, "libcudart.so.12") for i in range(14)}
    f = _one(_audit(ctx, ("mylib", "1.0", files)), "mylib")
    assert len(f.evidence) == g1_installed.MAX_EVIDENCE + 1
    assert f.evidence[-1] == "… and 2 more"
    few = {f"mylib/_C{i}.so": _so(ctx, "libcudart.so.12") for i in range(12)}
    g = _one(_audit(ctx, ("other", "1.0", {k.replace("mylib", "other"): v for k, v in few.items()})), "other")
    assert len(g.evidence) == 12 and not g.evidence[-1].startswith("…")


def test_wrong_cpu_shared_objects_are_listed_first_with_the_fix(ctx):
    files = {"mylib/_C.so": _so(ctx, "libcudart.so.13", arch="x86_64")}
    f = _one(_audit(ctx, ("mylib", "1.0", files), arch="aarch64"), "mylib")
    assert f.status is Status.FAIL
    assert f.summary.startswith(
        "mylib 1.0 ships 1 x86_64 shared object(s) in a aarch64 environment (mylib/_C.so)"
    )
    assert f.evidence[0] == "mylib/_C.so is x86_64"
    assert f.fix and f.fix.startswith("reinstall it for aarch64 (a wheel copied from another machine")


def test_a_cpu_only_build_by_class_warns_with_the_fix(ctx):
    on_x86 = 'nvidia-cublas-cu12>=12; platform_machine == "x86_64"'
    files = {"gpuengine/_engine.so": _so(ctx, "libm.so.6", arch="aarch64")}
    f = _one(_audit(ctx, ("gpuengine", "1.0", files, [on_x86]), arch="aarch64"), "gpuengine")
    assert f.status is Status.WARN
    assert f.summary.startswith("gpuengine 1.0 looks like a CPU-only build for aarch64: ")
    assert f.summary.endswith("— on a Spark it runs on the CPU")
    assert f.evidence[-2] == "its Requires-Dist asks for nvidia-cublas-cu12>=12 on x86_64 only"
    assert f.evidence[-1] == "its aarch64 files list no CUDA library and none of its shared objects links one"
    assert f.fix == (
        "use a build of gpuengine for aarch64 with CUDA 13 if its publisher has one (a newer release, "
        "another index, an NGC image), or build it against CUDA on the Spark"
    )


def test_a_cpu_only_torch_by_its_files(ctx):
    f = _one(_audit(ctx, ("torch", "2.9.1", {"torch/lib/libtorch_cpu.so": _so(ctx, "libm.so.6")})), "torch")
    assert f.status is Status.FAIL
    assert "is a CPU-only build (no libtorch_cuda.so among its files)" in f.summary
    assert f.evidence[-1] == "no libtorch_cuda.so among its files"
    # a torch whose files are not listed: no claim about what it lacks
    env = ctx.env("aarch64")
    env.add("torch", "2.9.1", files={"torch/lib/libtorch_cpu.so": _so(ctx, arch="aarch64")}, record=False)
    assert not [x for x in g1_installed.installed(sf.installed(ctx, "aarch64")) if x.subject == "torch"]


def test_damaged_metadata_and_missing_files_are_said_with_the_reinstall(ctx):
    env = ctx.env()
    info = env.add("mylib", "1.0", files={"mylib/_C.so": _so(ctx, "libcudart.so.13")})
    (env.site / "mylib" / "_C.so").unlink()
    broken = env.site / "broken-1.0.dist-info"
    broken.mkdir()
    (broken / "METADATA").write_text("Metadata-Version: 2.1\nName: broken\n")
    found = g1_installed.installed(sf.installed(ctx))
    meta = _one(found, str(broken / "METADATA"))
    assert meta.status is Status.ERROR
    assert (
        meta.summary
        == f"{broken / 'METADATA'}: METADATA has no Version field; this distribution was not checked"
    )
    assert meta.fix == "reinstall the distribution (pip install --force-reinstall --no-deps)"
    missing = str(env.site / "mylib" / "_C.so")
    gone = _one(found, missing)
    assert gone.status is Status.WARN
    assert gone.summary == f"{missing} (mylib): listed in RECORD but missing; not checked"
    assert gone.evidence == ("owner: mylib",)
    assert gone.fix == "pip install --force-reinstall --no-deps mylib"
    assert info.is_dir()


def test_the_chain_reads_markers_for_the_environments_cpu(ctx):
    """ray pulls cupy-cuda12x in only on aarch64 (a marker): the chain holds it in an aarch64 environment."""
    found = _audit(
        ctx,
        ("myapp", "1.0", None, ["ray[cgraph]"]),
        ("ray", "2.50.0", None, ['cupy-cuda12x; platform_machine == "aarch64" and extra == "cgraph"']),
        ("cupy-cuda12x", "13.6.0", None),
        arch="aarch64",
    )
    f = _one(found, "cupy-cuda12x")
    assert f.summary.startswith("cupy-cuda12x 13.6.0 (via myapp → ray[cgraph] → cupy-cuda12x) needs CUDA 12")
    assert f.fix == "fix ray first (it pulls cupy-cuda12x in), then pip uninstall cupy-cuda12x"


def test_a_per_release_library_is_shown_in_the_evidence(ctx):
    files = {"bitsandbytes/libbitsandbytes_cuda130.so": _so(ctx, "libm.so.6")}
    f = _one(_audit(ctx, ("bitsandbytes", "0.49.2", files)), "bitsandbytes")
    assert f.status is Status.PASS and "carries libbitsandbytes_cuda130.so" in f.evidence

"""The audit's side of the CPU-only class (rules/cpu_only_class.py, through g1_installed.dist_finding, the
function the lock calls too): an installed aarch64 distribution whose METADATA asks for CUDA libraries on
x86_64 only and whose real shared objects link none is a G1 WARN with the evidence; one whose shared
object links CUDA 13 is not."""

from __future__ import annotations

import pytest
import stage_facts as sf

from sparkenv import rules

ON_X86 = 'nvidia-cublas-cu12>=12; platform_machine == "x86_64"'


def _audit(ctx, so_needed: tuple[str, ...]):
    env = ctx.env("aarch64")
    so = ctx.elves.linked(so_needed, "aarch64")
    env.add("gpuengine", "1.0", requires=(ON_X86,), files={"gpuengine/_engine.so": so})
    found = rules.evaluate(rules.Stage.INSTALLED, sf.installed(ctx, "aarch64"))
    return [f for f in found if f.id.value == "G1" and f.subject == "gpuengine"]


def test_audit_warns_of_a_cpu_only_build_of_a_gpu_capable_package(ctx):
    (f,) = _audit(ctx, ("libm.so.6",))
    assert f.status.value == "WARN" and "CPU-only build for aarch64" in f.summary
    assert "nvidia-cublas-cu12>=12 on x86_64 only" in f.summary
    assert "none of its shared objects links one" in f.summary


def test_audit_leaves_a_cuda13_build_alone(ctx):
    found = _audit(ctx, ("libcudart.so.13",))
    assert all(f.status.value in ("PASS", "INFO") for f in found), found


def _judged(ctx, requires, files, arch: str = "aarch64"):
    """G1's findings of `gpuengine` installed with these Requires-Dist lines and files, audited for `arch`."""
    env = ctx.env(arch)
    env.add("gpuengine", "1.0", requires=tuple(requires), files=files)
    found = rules.evaluate(rules.Stage.INSTALLED, sf.installed(ctx, arch))
    return [f for f in found if f.id.value == "G1" and f.subject == "gpuengine"]


def _so(ctx, arch: str = "aarch64"):
    return ctx.elves.linked(("libm.so.6",), arch)


def _cpu_only(found) -> list:
    return [f for f in found if "CPU-only build" in f.summary]


def test_the_warn_says_what_to_do(ctx):
    (f,) = _audit(ctx, ("libm.so.6",))
    wanted = "use a build of gpuengine for aarch64 with CUDA 13 if its publisher has one"
    assert f.fix.startswith(wanted), f.fix
    assert "its aarch64 files list no CUDA library and none of its shared objects links one" in f.evidence


def test_many_x86_only_cuda_requirements_are_shown_three_and_counted(ctx):
    libs = ["nvidia-cublas-cu12", "nvidia-cufft-cu12", "nvidia-curand-cu12", "nvidia-cusparse-cu12"]
    requires = [f'{n}>=12; platform_machine == "x86_64"' for n in libs]
    (f,) = _judged(ctx, requires, {"gpuengine/_e.so": _so(ctx)})
    assert f.status.value == "WARN", f
    shown = "nvidia-cublas-cu12>=12, nvidia-cufft-cu12>=12, nvidia-curand-cu12>=12 and 1 more on x86_64 only"
    assert shown in f.summary, f.summary


def test_an_unreadable_requirement_does_not_hide_the_next(ctx):
    # a Requires-Dist line packaging cannot parse is skipped, not the end of the reading
    (f,) = _judged(ctx, ["not a requirement ===", ON_X86], {"gpuengine/_e.so": _so(ctx)})
    assert f.status.value == "WARN" and "nvidia-cublas-cu12>=12 on x86_64 only" in f.summary, f


def test_a_cuda_extra_on_x86_only_is_cuda_bound(ctx):
    # jax[cuda12] names no CUDA library by name: its extra asks for the CUDA 12 build
    (f,) = _judged(ctx, ['jax[cuda12]>=0.4; platform_machine == "x86_64"'], {"gpuengine/_e.so": _so(ctx)})
    assert f.status.value == "WARN" and "jax[cuda12]>=0.4 on x86_64 only" in f.summary, f


@pytest.mark.parametrize(
    ("requires", "files"),
    [
        # CUDA asked for on aarch64 as well: a CUDA build for both
        ((ON_X86, 'nvidia-cublas>=13; platform_machine == "aarch64"'), {}),
        # asks for nothing CUDA at all
        (("numpy>=1.26",), {}),
        # ships a CUDA library by soname
        ((ON_X86,), {"gpuengine/lib/libcudart.so.13": "libcudart"}),
        # ships a library under a CUDA-major folder (nvidia/cu13/…)
        ((ON_X86,), {"gpuengine/nvidia/cu13/lib/libkernels.so": "libkernels"}),
    ],
    ids=["cuda-on-aarch64-too", "no-cuda-asked", "ships-cudart", "ships-cu13-folder"],
)
def test_what_is_not_a_cpu_only_build(ctx, requires, files):
    found = _judged(ctx, requires, {"gpuengine/_e.so": _so(ctx), **{k: _so(ctx) for k in files}})
    assert not _cpu_only(found), found


def test_pure_python_is_no_build_to_be_cpu_only(ctx):
    assert not _cpu_only(_judged(ctx, (ON_X86,), {"gpuengine/__init__.py": "x = 1\n"}))


def test_on_x86_64_the_other_platform_is_aarch64(ctx):
    on_arm = 'nvidia-cublas>=13; platform_machine == "aarch64"'
    (f,) = _judged(ctx, (on_arm,), {"gpuengine/_e.so": _so(ctx, "x86_64")}, arch="x86_64")
    assert f.status.value == "WARN" and "CPU-only build for x86_64" in f.summary, f
    assert "nvidia-cublas>=13 on aarch64 only" in f.summary, f.summary


def test_a_requirement_without_cuda_does_not_end_the_reading(ctx):
    (f,) = _judged(ctx, ["numpy>=1.26", ON_X86], {"gpuengine/_e.so": _so(ctx)})
    assert f.status.value == "WARN" and "nvidia-cublas-cu12>=12 on x86_64 only" in f.summary, f


def _locked(paths: tuple[str, ...], machine: str = "aarch64", requires: tuple[str, ...] = (ON_X86,)):
    """G1's finding of a resolved wheel as `sparkenv lock` views it (g1_wheels.wheel_views): its central
    directory's paths, its ELF not read (not a GPU package), judged by the audit's own function."""
    from sparkenv.environment.markers import marker_environment
    from sparkenv.facts.dist_view import WheelDist
    from sparkenv.rules import cuda_major
    from sparkenv.rules.g1_installed import dist_finding
    from sparkenv.rules.g1_wheels import NOT_A_GPU_PACKAGE

    view = WheelDist("gpuengine", "1.0", requires, paths, unread=NOT_A_GPU_PACKAGE)
    return dist_finding(view, cuda_major.bind(view, marker_environment(machine, "3.12")), machine, [], False)


def test_at_lock_no_claim_about_links_it_did_not_read():
    f = _locked(("gpuengine/_engine.so",))
    assert f is not None and f.status.value == "WARN", f
    assert "its aarch64 files list no CUDA library — on a Spark" in f.summary, f.summary


def test_a_member_named_with_backslashes_is_still_a_cuda_library():
    # a zip made on Windows may name its members with backslashes: nvidia\cu13\lib is a CUDA folder still
    f = _locked(("gpuengine/_engine.so", "gpuengine\\nvidia\\cu13\\lib\\libkernels.so"))
    assert f is None or "CPU-only build" not in f.summary, f


def test_a_cpu_neither_spark_nor_x86_compares_with_x86_64():
    # CUDA wheels are x86_64's first: a ppc64le build that asks for them there only is CPU-only too
    f = _locked(("gpuengine/_engine.so",), "ppc64le")
    assert f is not None and "CPU-only build for ppc64le" in f.summary, f
    assert "nvidia-cublas-cu12>=12 on x86_64 only" in f.summary, f.summary

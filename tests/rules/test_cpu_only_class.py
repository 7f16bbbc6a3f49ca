"""The audit's side of the CPU-only class (rules/cpu_only_class.py, through g1_installed.dist_finding, the
function the lock calls too): an installed aarch64 distribution whose METADATA asks for CUDA libraries on
x86_64 only and whose real shared objects link none is a G1 WARN with the evidence; one whose shared
object links CUDA 13 is not."""

from __future__ import annotations

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

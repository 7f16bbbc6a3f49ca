"""rules/cuda_builds.py through G1's resolved CPU-only verdict (g1_declared.resolved_cpu_only), as `sparkenv
lock` says it: what shows that a resolved torch (torchvision, torchaudio, onnxruntime-gpu, jax) is a CUDA
build — its label, a CUDA 13 runtime among its Requires-Dist, an exact pin on a family member that is one or
is the base's, a CUDA library in its RECORD — and, when nothing does, the fix: the first default-index
release that carries CUDA 13 for the target's CPU (packages.toml [[cuda13_from]], dated) or the family's
own channel. Versions are the real ones: torch 2.11.0's aarch64 wheel requires cuda-toolkit==13.0.2 (the
data's evidence), ngc-25.11's torch is its profile's."""

from __future__ import annotations

import stage_facts as sf

from sparkenv.core.report import Finding, Status
from sparkenv.environment import profiles
from sparkenv.knowledge import packages
from sparkenv.rules import cuda_builds
from sparkenv.rules.g1_declared import resolved_cpu_only

TARGET = profiles.load("spark-bare").python_platform  # aarch64-manylinux_2_39
NGC_TORCH = profiles.load("ngc-25.11").provides["torch"]  # 2.10.0a0+b558c986e8.nv25.11
LINUX = '; platform_system == "Linux"'


def said(facts) -> dict[str, Finding]:
    found = resolved_cpu_only(facts)
    assert len({f.subject for f in found}) == len(found), found
    return {f.subject: f for f in found}


def build_of(facts, key: str) -> str:
    """What the PASS says shows `key` is a CUDA build."""
    f = said(facts)[key]
    assert f.status is Status.PASS and f.fix is None, f
    head = f"{key} {facts.locked[key].version} (via {key}) is a CUDA build: "
    assert f.summary.startswith(head), f.summary
    return f.summary.removeprefix(head)


def test_a_cpu_only_torch_is_told_the_first_release_with_cuda_13_for_its_cpu():
    first = packages().first_cuda13("torch", "aarch64")
    assert first is not None  # dated: the aarch64 wheels carry CUDA from this release on
    f = said(sf.resolved(sf.locked("torch", "2.9.1")))["torch"]
    assert f.status is Status.FAIL
    assert f.summary == (
        f"torch 2.9.1 (via torch) is a CPU-only build for {TARGET}: no CUDA label, no CUDA runtime among its "
        "Requires-Dist, no CUDA library in its RECORD — on a Spark it runs on the CPU"
    )
    assert f.fix == (
        f"use torch>={first.version} (the default index's aarch64 wheels carry CUDA 13 from {first.version} "
        f"on; before: {first.before}), or {cuda_builds.families()['torch'].instead}"
    )
    assert f.evidence == ("torch-2.9.1-py3-none-any.whl", "via torch")


def test_a_family_member_the_data_does_not_date_gets_its_familys_own_fix():
    assert packages().first_cuda13("jax", "aarch64") is None
    f = said(sf.resolved(sf.locked("jax", "0.7.0"), records={"jax": "jax/__init__.py,sha256=A,1\n"}))["jax"]
    assert f.status is Status.FAIL
    assert f.fix == f"use {cuda_builds.families()['jax'].instead}"
    assert f.fix.startswith("use jax[cuda13] (")
    assert cuda_builds.instead("torchvision", "aarch64") == (
        "the torchvision release paired with a CUDA 13 torch, or " + packages().cuda13_index
    )


def test_a_cuda_label_an_ngc_label_or_a_cuda_13_runtime_shows_a_cuda_build():
    assert build_of(sf.resolved(sf.locked("torch", "2.11.0+cu130")), "torch") == (
        "its label (+cu) in 2.11.0+cu130"
    )
    assert build_of(sf.resolved(sf.locked("torch", NGC_TORCH)), "torch") == f"its NGC label in {NGC_TORCH}"
    toolkit = f"cuda-toolkit[cudart]==13.0.2{LINUX}"
    assert build_of(sf.resolved(sf.locked("torch", "2.11.0", (toolkit,))), "torch") == (
        f"it requires {toolkit}"
    )


def test_a_cuda_12_runtime_is_not_a_cpu_only_verdict():
    """torch 2.10.0's wheel for x86_64 requires a CUDA 12 runtime: G1's CUDA 12 verdict, not this one."""
    facts = sf.resolved(sf.locked("torch", "2.10.0", (f"nvidia-cuda-nvrtc-cu12==12.8.93{LINUX}",)))
    assert "torch" not in said(facts)
    assert "torch" not in cuda_builds.evidence(facts.versions, list(facts.edges), facts.base_versions)


def test_an_exact_pin_on_a_cuda_build_or_on_the_bases_torch_is_evidence():
    facts = sf.resolved(
        sf.locked("torchvision", "0.26.0", ("torch==2.11.0+cu130",)), sf.locked("torch", "2.11.0+cu130")
    )
    assert build_of(facts, "torchvision") == (
        "it requires torch==2.11.0+cu130, a CUDA build (its label (+cu) in 2.11.0+cu130)"
    )
    on_base = sf.resolved(sf.locked("torchaudio", "2.10.0", (f"torch=={NGC_TORCH}",)), profile="ngc-25.11")
    assert build_of(on_base, "torchaudio") == (
        f"it requires torch=={NGC_TORCH}, a CUDA build (the base's build ({NGC_TORCH}))"
    )


def test_a_pin_on_another_torch_than_the_bases_is_not_the_bases_build():
    other = sf.resolved(sf.locked("torchaudio", "2.9.0", ("torch==2.9.0",)), profile="ngc-25.11")
    verdicts = cuda_builds.evidence(other.versions, list(other.edges), other.base_versions)
    assert verdicts == {"torchaudio": None}  # nothing shows CUDA: its RECORD is read next


def test_a_cuda_library_in_the_record_shows_a_cuda_build():
    record = (
        "onnxruntime/__init__.py,sha256=A,1\n"
        "onnxruntime/capi/libonnxruntime_providers_cuda.so,sha256=B,2\n"
        "onnxruntime/capi/libcudart.so.13,sha256=C,3\n"
    )
    facts = sf.resolved(sf.locked("onnxruntime-gpu", "1.23.0"), records={"onnxruntime-gpu": record})
    assert build_of(facts, "onnxruntime-gpu") == (
        "its RECORD lists onnxruntime/capi/libonnxruntime_providers_cuda.so"
    )
    jax = "jax/__init__.py,sha256=A,1\njax_plugins/xla_cuda13/libcudart.so.13,sha256=B,2\n"
    facts = sf.resolved(sf.locked("jax", "0.7.0"), records={"jax": jax})
    assert build_of(facts, "jax") == "its RECORD lists jax_plugins/xla_cuda13/libcudart.so.13"
    assert (
        cuda_builds.record_evidence("jax", "jax/_src/lib.so,sha256=A,1\njax/libjax.so.13,sha256=B,2\n")
        is None
    )


def test_a_family_member_tied_to_a_cuda_12_torch_is_not_called_a_cuda_build():
    """torch pinning a CUDA 12 toolkit is G1's CUDA 12 verdict (rules/g1_declared.resolved); torchvision
    pinned to it is no CUDA build of the target's either."""
    toolkit = f"cuda-toolkit[cudart]==12.8.1{LINUX}"
    facts = sf.resolved(
        sf.locked("torch", "2.10.0", (toolkit,)), sf.locked("torchvision", "0.25.0", ("torch==2.10.0",))
    )
    assert said(facts) == {}
    assert cuda_builds.evidence(facts.versions, list(facts.edges), facts.base_versions) == {
        "torchvision": None
    }


def test_only_an_exact_pin_on_a_family_member_ties_a_build():
    """A range on torch, or a pin on the base's triton (not a torch family member), says nothing of
    torchaudio's build: it is left to its RECORD."""
    ranged = sf.resolved(
        sf.locked("torchaudio", "2.11.0", ("torch>=2.11",)), sf.locked("torch", "2.11.0+cu130")
    )
    verdicts = cuda_builds.evidence(ranged.versions, list(ranged.edges), ranged.base_versions)
    assert verdicts == {"torch": "its label (+cu) in 2.11.0+cu130", "torchaudio": None}
    triton = sf.resolved(profile="ngc-25.11").base_versions["triton"]  # 3.5.0+gitde3506d2
    on_base = sf.resolved(sf.locked("torchaudio", "2.9.0", (f"triton=={triton}",)), profile="ngc-25.11")
    assert cuda_builds.evidence(on_base.versions, list(on_base.edges), on_base.base_versions) == {
        "torchaudio": None
    }


def test_a_cycle_of_exact_pins_ends_in_a_verdict():
    """torch and torchvision pinning each other exactly, neither showing CUDA: each is judged once."""
    facts = sf.resolved(
        sf.locked("torch", "2.9.1", ("torchvision==0.24.1",)),
        sf.locked("torchvision", "0.24.1", ("torch==2.9.1",)),
    )
    found = said(facts)
    assert found["torch"].status is Status.FAIL and "is a CPU-only build" in found["torch"].summary
    assert found["torchvision"].status is Status.FAIL
    assert "is pinned to torch 2.9.1, a CPU-only build" in found["torchvision"].summary
    assert found["torchvision"].fix == f"use {cuda_builds.instead('torchvision', 'aarch64')}"

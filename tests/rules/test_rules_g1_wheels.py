"""rules/g1_wheels.py: what `sparkenv lock` says of each resolved binary wheel from what it ships — its
file list (the zip central directory) and, for GPU packages, the DT_NEEDED of its shared objects (real
aarch64 ELF compiled here, read as the lock reads a wheel member) — judged by the audit's own function.
A wheel whose list could not be read is an INFO, never a silent PASS; a package whose name or version
label already says its CUDA major is g1_declared's, one line per package."""

from __future__ import annotations

import dataclasses

import pytest
import stage_facts as sf

from sparkenv.core.report import GotchaId, Status
from sparkenv.cuda import elf
from sparkenv.facts.resolved import WheelElves
from sparkenv.rules.g1_wheels import NOT_A_GPU_PACKAGE, resolved_wheel_files

TARGET = "aarch64-manylinux_2_39"  # spark-bare's python_platform (data/profiles/spark-bare.toml)
BUNDLES_12 = ("mylib/_C.so", "mylib/lib/libcudart.so.12")  # a wheel that ships CUDA 12's runtime
SHIPS_12 = (
    "mylib 1.0{via} bundles libcudart.so.12 (CUDA 12): whether its shared objects link it was not read "
    f"({NOT_A_GPU_PACKAGE}); `sparkenv audit` reads it after install"
)
NO_CUDA_13_BUILD = (
    "no known CUDA 13 build of mylib (sparkenv's data names none): use a CUDA 13 build of it if its "
    "publisher has one, build it against CUDA 13 on the Spark"
)


def said(facts) -> dict[str, object]:
    found = resolved_wheel_files(facts)
    assert all(f.id is GotchaId.G1 for f in found), found
    assert len({f.subject for f in found}) == len(found), found
    return {f.subject: f for f in found}


def _read(elves, *needed: str) -> elf.ElfInfo:
    """The ELF facts of a real aarch64 shared object linking `needed`, as the lock reads a wheel member."""
    info = elf.parse_bytes(elves.linked(tuple(needed), "aarch64").read_bytes())
    assert isinstance(info, elf.ElfInfo), info
    return info


def test_a_wheel_whose_file_list_could_not_be_read_is_an_info_and_the_others_are_still_judged():
    facts = sf.resolved(
        sf.locked("alib", "1.0"),
        sf.locked("mylib", "1.0"),
        wheel_files={"alib": "HTTP 404 for its wheel", "mylib": BUNDLES_12, "zlib": BUNDLES_12},
    )  # zlib: a list read for a package the lock did not keep — not part of the lock, not judged
    found = said(facts)
    assert sorted(found) == ["alib", "mylib"]
    f = found["alib"]
    assert f.status is Status.INFO and f.fix is None
    assert f.summary == (
        "alib 1.0 (via alib): its wheel's file list could not be read (HTTP 404 for its wheel); its "
        "libraries are checked only by `sparkenv audit` after install"
    )
    assert f.evidence == ("alib-1.0-py3-none-any.whl", "via alib")
    assert found["mylib"].status is Status.INFO
    assert found["mylib"].summary == SHIPS_12.format(via="")


@pytest.mark.parametrize("version", ["1.0+cpu", "1.0+cu128"])
def test_a_version_label_that_says_the_build_leaves_the_wheel_to_g1_declared(version):
    """+cpu and +cu128 are judged from the label (g1_declared): the file list adds no second line."""
    facts = sf.resolved(
        sf.locked("alib", version),
        sf.locked("mylib", "1.0"),
        wheel_files={"alib": BUNDLES_12, "mylib": BUNDLES_12},
    )
    assert sorted(said(facts)) == ["mylib"]


def test_the_chain_that_pulled_the_wheel_in_is_named():
    facts = sf.resolved(
        sf.locked("app", "1.0", ("mylib",)),
        sf.locked("mylib", "1.0"),
        wheel_files={"mylib": BUNDLES_12},
        roots=("app",),
    )
    assert said(facts)["mylib"].summary == SHIPS_12.format(via=" (via app → mylib)")


@pytest.mark.parametrize(("profile", "ngc"), [("spark-bare", " or use the NGC image"), ("ngc-25.11", "")])
def test_a_wheel_linking_cuda_12_fails_and_the_ngc_image_is_offered_off_an_ngc_base(elves, profile, ngc):
    facts = sf.resolved(
        sf.locked("app", "1.0", ("mylib",)),
        sf.locked("mylib", "1.0"),
        wheel_files={"mylib": BUNDLES_12},
        roots=("app",),
        profile=profile,
    )
    facts = dataclasses.replace(
        facts, wheel_elves={"mylib": WheelElves((("mylib/_C.so", _read(elves, "libcudart.so.12")),))}
    )
    f = said(facts)["mylib"]
    assert f.status is Status.FAIL
    assert f.summary == (
        "mylib 1.0 (via app → mylib) needs CUDA 12: mylib/_C.so links libcudart.so.12 — target is CUDA 13 "
        "(read from its wheel)"
    )
    assert f.fix == NO_CUDA_13_BUILD + ngc


def test_a_gpu_package_whose_elf_was_not_all_read_says_why(elves):
    facts = sf.resolved(sf.locked("mylib", "1.0"), wheel_files={"mylib": ("mylib/_C.so", "mylib/_D.so")})
    read = WheelElves(
        (("mylib/_C.so", _read(elves, "libcudart.so.13")),), unread="mylib/_D.so is past the budget"
    )
    f = said(dataclasses.replace(facts, wheel_elves={"mylib": read}))["mylib"]
    assert f.status is Status.INFO
    assert f.summary == (
        "mylib 1.0: mylib/_C.so links libcudart.so.13; what its shared objects link was not all read "
        "(mylib/_D.so is past the budget); `sparkenv audit` reads it after install"
    )


def test_a_cuda_12_runtime_among_the_wheels_requires_dist_fails():
    facts = sf.resolved(
        sf.locked("mylib", "1.0", ("nvidia-cuda-runtime-cu12==12.8.90",)),
        wheel_files={"mylib": ("mylib/_C.so",)},
    )
    f = said(facts)["mylib"]
    assert f.status is Status.FAIL
    assert f.summary == (
        "mylib 1.0 needs CUDA 12: requires nvidia-cuda-runtime-cu12==12.8.90 — target is CUDA 13 "
        "(read from its wheel)"
    )
    assert f.fix == NO_CUDA_13_BUILD + " or use the NGC image"
    assert f.evidence[-1] == "requires nvidia-cuda-runtime-cu12==12.8.90"

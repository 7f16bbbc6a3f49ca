"""rules/cuda_major.py's evidence as the user meets it through G1, for the pieces no other row reached:
NGC builds (the versions the shipped profiles record), a CPU-only torch a pin ties a family member to,
the CUDA install layouts, a CUDA library a wheel ships whose ELF the lock did not read, a library a
package bundles, and an exact pin on a versioned CUDA toolkit wheel among Requires-Dist."""

from __future__ import annotations

import dataclasses

import pytest
import stage_facts as sf
from rule_table import Row, check, ids

from sparkenv.core.report import Status
from sparkenv.cuda import rules
from sparkenv.environment import profiles
from sparkenv.facts.resolved import WheelElves
from sparkenv.knowledge import packages
from sparkenv.rules import cuda_major
from sparkenv.rules.g1_declared import fix_for
from sparkenv.rules.g1_wheels import NOT_A_GPU_PACKAGE

PASS, WARN, FAIL, INFO = Status.PASS, Status.WARN, Status.FAIL, Status.INFO
LINUX = '; platform_system == "Linux"'


def _ngc_torches() -> dict[str, str]:
    """profile -> the NGC torch version it records (the .nvYY.MM builds of the shipped profiles)."""
    found = {n: p.provides.get("torch", "") for n, p in sorted(profiles.shipped().items())}
    return {n: v for n, v in found.items() if rules.ngc_release(v)}


NGC = _ngc_torches()
NGC_25_11 = profiles.shipped()["ngc-25.11"].provides["torch"]
CU130 = packages().cuda13_index
FIRST = packages().first_cuda13("torch", "aarch64")  # the first default-index torch with CUDA 13 there
CPU_INDEX = CU130.rsplit("/", 1)[0] + "/cpu"  # the same index's CPU channel
PURE_WHEEL = "https://files.example.invalid/mypkg/mypkg-1.0-py3-none-any.whl"


def _installed(ctx, *dists, arch="x86_64"):
    env = ctx.env(arch)
    for name, version, files, *requires in dists:
        env.add(name, version, requires=requires[0] if requires else (), files=files)
    return sf.installed(ctx, arch)


def _so(ctx, *needed):
    return ctx.elves.linked(tuple(needed), "x86_64")


def _wheel(key: str, version: str, paths: tuple[str, ...], elves: WheelElves | None = None, **kw):
    """One resolved wheel whose central directory lists `paths`; `elves`: its members' ELF, when the lock
    read them (a GPU package), else none was read."""
    facts = sf.resolved(sf.locked(key, version), wheel_files={key: paths}, **kw)
    if elves is not None:
        facts = dataclasses.replace(facts, wheel_elves={key: elves})
    return facts


ROWS = [
    # --- NGC builds --------------------------------------------------------------------------------
    Row(
        "g1.declared",
        "an NGC torch pinned by version",
        lambda c: sf.declared(c, f"torch=={NGC_25_11}\n"),
        "torch",
        PASS,
        None,
        "is built for CUDA 13",
    ),
    Row(
        "g1.resolved",
        "an NGC torch in the resolved set",
        lambda c: sf.resolved(sf.locked("torch", NGC_25_11)),
        "torch",
        PASS,
        None,
        "is built for CUDA 13",
    ),
    Row(
        "g1.installed",
        "an installed NGC torch",
        lambda c: _installed(
            c, ("torch", NGC_25_11, {"torch/lib/libtorch_cuda.so": _so(c, "libcudart.so.13")})
        ),
        "torch",
        PASS,
        None,
        "needs CUDA 13",
    ),
    # --- a CPU-only torch that an exact pin ties a family member to ----------------------------------
    Row(
        "g1.resolved",
        "torchvision pinned to a CPU-only torch",
        lambda c: sf.resolved(
            sf.locked("torchvision", "0.24.1", ("torch==2.9.1",)), sf.locked("torch", "2.9.1")
        ),
        "torchvision",
        FAIL,
        "the torchvision release paired with a CUDA 13 torch",
        "is pinned to torch 2.9.1, a CPU-only build",
    ),
    Row(  # the same pin on a CUDA 13 torch: nothing to say of torchvision's own metadata
        "g1.resolved",
        "torchvision pinned to a CUDA 13 torch",
        lambda c: sf.resolved(
            sf.locked("torchvision", "0.24.1+cu130", ("torch==2.9.1+cu130",)),
            sf.locked("torch", "2.9.1+cu130", ("nvidia-cuda-runtime==13.0.48",)),
        ),
        "torchvision",
        PASS,
    ),
    # --- install layouts only one CUDA major's wheels use --------------------------------------------
    Row(
        "g1.installed",
        "headers in the CUDA 13 layout",
        lambda c: _installed(
            c, ("nvidia-cuda-cccl", "13.0.85", {"nvidia/cu13/include/cuda/std/version": "// cccl\n"})
        ),
        "nvidia-cuda-cccl",
        PASS,
        None,
        "installs into nvidia/cu13/include/cuda/std/ (CUDA 13 layout)",
    ),
    Row(
        "g1.installed",
        "headers in the CUDA 12 layout",
        lambda c: _installed(c, ("mycuda", "12.9.0", {"nvidia/cu12/include/mycuda.h": "// mycuda\n"})),
        "mycuda",
        FAIL,
        "no known CUDA 13 build of",
        "needs CUDA 12: installs into nvidia/cu12/include/ (CUDA 12 layout)",
    ),
    # --- a CUDA library shipped in a wheel whose ELF the lock did not read ---------------------------
    Row(
        "g1.resolved",
        "a wheel that bundles libcudart.so.12, its ELF not read",
        lambda c: _wheel("mylib", "1.0", ("mylib/_C.so", "mylib/lib/libcudart.so.12")),
        "mylib",
        INFO,
        None,
        f"bundles libcudart.so.12 (CUDA 12): whether its shared objects link it was not read "
        f"({NOT_A_GPU_PACKAGE})",
    ),
    Row(  # what the read ELF says instead: the same library, linked, is a FAIL
        "g1.resolved",
        "a wheel whose read ELF links the libcudart.so.12 it bundles",
        lambda c: _wheel(
            "mylib",
            "1.0",
            ("mylib/_C.so", "mylib/lib/libcudart.so.12"),
            WheelElves((("mylib/_C.so", _elf(c, "mylib/_C.so", "libcudart.so.12")),)),
        ),
        "mylib",
        FAIL,
        "no known CUDA 13 build of",
        "needs CUDA 12: mylib/_C.so links libcudart.so.12",
    ),
    # --- a CUDA library a package bundles (its ELF read) ---------------------------------------------
    Row(
        "g1.installed",
        "bundles libcupti.so.12 beside its CUDA 13 object, nothing links it",
        lambda c: _installed(
            c,
            (
                "mykernels",
                "3.1.0",
                {
                    "mykernels/backends/lib/libcupti.so.12": c.elves.stub("libcupti.so.12"),
                    "mykernels/_C.so": _so(c, "libcudart.so.13"),
                },
            ),
        ),
        "mykernels",
        INFO,
        None,
        "bundles libcupti.so.12 (CUDA 12) that none of its shared objects links: loaded on demand",
    ),
    Row(
        "g1.installed",
        "bundles libcudart.so.12 under another file name, nothing else CUDA",
        lambda c: _installed(c, ("mytool", "2.0", {"mytool/lib/_rt.so": c.elves.stub("libcudart.so.12")})),
        "mytool",
        INFO,
        None,
        "bundles libcudart.so.12 (CUDA 12) that none of its shared objects links",
    ),
    # --- an exact pin on a versioned CUDA toolkit wheel among Requires-Dist --------------------------
    Row(
        "g1.installed",
        "requires cuda-toolkit pinned to 12.8",
        lambda c: _installed(c, ("mylib", "1.0", None, [f"cuda-toolkit[cudart]==12.8.1{LINUX}"])),
        "mylib",
        FAIL,
        "no known CUDA 13 build of",
        "needs CUDA 12: requires cuda-toolkit[cudart]==12.8.1",
    ),
    Row(
        "g1.installed",
        "requires cuda-toolkit pinned to 13.0",
        lambda c: _installed(c, ("mylib", "1.0", None, [f"cuda-toolkit[cudart]==13.0.2{LINUX}"])),
        "mylib",
        PASS,
        None,
        "needs CUDA 13: requires cuda-toolkit[cudart]==13.0.2",
    ),
    # --- what a declared requirement and its index say, both ways ------------------------------------
    Row(
        "g1.declared",
        "the CUDA 13 index",
        lambda c: sf.declared(c, f"--extra-index-url {CU130}\nrequests\n"),
        CU130,
        None,
    ),
    Row(
        "g1.declared",
        "the CPU index",
        lambda c: sf.declared(c, f"--index-url {CPU_INDEX}\ntorch\n"),
        CPU_INDEX,
        FAIL,
        f"use {CU130} (or leave torch to the NGC base)",
        f"index {CPU_INDEX} serves CPU-only builds — target is CUDA 13",
    ),
    Row(
        "g1.declared",
        "a toolkit wheel pinned to CUDA 12, on an NGC base",
        lambda c: sf.declared(c, "cuda-toolkit==12.8.1\n", profile="ngc-25.11"),
        "cuda-toolkit",
        FAIL,
        "use cuda-toolkit 13.x",
        "requirements.txt:1) is CUDA 12's (its version is the CUDA version) — target is CUDA 13",
    ),
    Row(
        "g1.declared",
        "a pure-Python wheel URL",
        lambda c: sf.declared(c, f"mypkg @ {PURE_WHEEL}\n"),
        "mypkg",
        None,
    ),
    Row(
        "g1.declared",
        "torch pinned to the first release with CUDA 13 on the default index",
        lambda c: sf.declared(c, f"torch=={FIRST.version}\n"),
        "torch",
        None,
    ),
    Row(
        "g1.declared",
        "a cu130 torch, said as declared",
        lambda c: sf.declared(c, "torch==2.11.0+cu130\n"),
        "torch",
        PASS,
        None,
        "requirements.txt:1) is built for CUDA 13",
    ),
    # --- resolved: a torch whose RECORD shows CUDA, a family member pinned to a +cpu torch ----------------
    Row(
        "g1.resolved",
        "an unlabelled torch whose RECORD lists libtorch_cuda.so",
        lambda c: sf.resolved(
            sf.locked("torch", "2.9.1"), records={"torch": "torch/lib/libtorch_cuda.so,sha256=AA,1\n"}
        ),
        "torch",
        PASS,
        None,
        "is a CUDA build: its RECORD lists torch/lib/libtorch_cuda.so",
    ),
    Row(
        "g1.resolved",
        "torchvision pinned to a +cpu torch",
        lambda c: sf.resolved(
            sf.locked("torch", "2.9.1+cpu"), sf.locked("torchvision", "0.24.1", ("torch==2.9.1+cpu",))
        ),
        "torchvision",
        FAIL,
        "the torchvision release paired with a CUDA 13 torch",
        "is pinned to torch 2.9.1+cpu, a CPU-only build",
    ),
]


def _elf(ctx, rel: str, *needed: str):
    """The ELF facts of a real compiled object that links `needed`, as the lock reads a wheel member."""
    from sparkenv.cuda import elf

    info = elf.parse_bytes(_so(ctx, *needed).read_bytes())
    assert isinstance(info, elf.ElfInfo), info
    return info


@pytest.mark.parametrize("row", ROWS, ids=ids(ROWS))
def test_g1_evidence(row, ctx):
    check(row, ctx)


@pytest.mark.parametrize(("profile", "version"), sorted(NGC.items()))
def test_every_shipped_ngc_torch_is_evidence_of_its_release_cuda(profile, version):
    """Each NGC torch a profile records is read as its release's build, the CUDA major from the release
    table (data/cuda.toml [ngc]), and checked as the target's: declared, it passes G1."""
    release = rules.ngc_release(version)
    assert release is not None, (profile, version)
    (ngc,) = [e for e in cuda_major.name_version_evidence("torch", version) if e.kind == "ngc"]
    major = rules.ngc_cuda_major(release)
    assert major == rules.target_major(), f"{profile}: NGC {release} is not in the table on CUDA 13"
    assert (ngc.major, ngc.text) == (major, f"NGC {release} build ({version}), CUDA {major}")


def test_an_ngc_release_missing_from_the_table_is_said_and_judged_by_nothing(ctx):
    """An NGC release the table does not list (a new one, or one older than it): its evidence says so
    and carries no major, so G1 neither passes nor fails the requirement on it."""
    version = NGC_25_11.replace(".nv25.11", ".nv99.01")  # a release label the table cannot have
    (ngc,) = cuda_major.name_version_evidence("torch", version)
    assert (ngc.kind, ngc.major) == ("ngc", None)
    assert ngc.text == f"NGC 99.01 build ({version}), CUDA major of that release not in the table"
    check(
        Row(
            "g1.declared",
            "unknown NGC release",
            lambda c: sf.declared(c, f"torch=={version}\n"),
            "torch",
            None,
        ),
        ctx,
    )


def test_what_a_declared_finding_rests_on(ctx):
    """A PASS shows where the requirement was read; the WARN on an unlabelled old torch pin shows the data
    it rests on, with when and where it was read."""
    passed = check(ROWS[[r.why for r in ROWS].index("a cu130 torch, said as declared")], ctx)
    where = f"{ctx.tmp_path / 'requirements.txt'}:1"
    assert passed is not None and passed.evidence == (where,)
    assert passed.summary == f"torch==2.11.0+cu130 ({where}) is built for CUDA 13"
    warned = check(
        Row(
            "g1.declared", "old pin", lambda c: sf.declared(c, "torch==2.9.0\n"), "torch", WARN, "pin torch>="
        ),
        ctx,
    )
    assert warned is not None
    assert warned.evidence == (
        where,
        f"{FIRST.evidence} (read {FIRST.checked}; {FIRST.source})",
    )


@pytest.mark.parametrize(("profile", "offered"), [("spark-bare", True), ("ngc-25.11", False)])
def test_the_ngc_image_is_offered_only_where_the_base_is_not_one(ctx, profile, offered):
    """A wheel URL of a CUDA 12 build: the fix offers the NGC image, except on a profile that is one."""
    gh_wheel = (
        "https://github.com/Dao-AILab/flash-attention/releases/download/v2.8.3/"
        "flash_attn-2.8.3+cu12torch2.9cxx11abiTRUE-cp312-cp312-linux_aarch64.whl"
    )
    row = Row(
        "g1.declared",
        f"CUDA 12 wheel URL on {profile}",
        lambda c: sf.declared(c, f"flash-attn @ {gh_wheel}\n", profile=profile),
        "flash-attn",
        FAIL,
        "install a CUDA 13 build",
        "is a CUDA 12 build (+cu label)",
    )
    found = check(row, ctx)
    assert found is not None and found.fix is not None
    assert ("or use the NGC image" in found.fix) is offered, found.fix


def test_the_fix_for_an_ngc_build_on_another_cuda_names_the_first_release_on_the_target():
    """No shipped NGC release is on CUDA 12 (data/cuda.toml [ngc]), so no row reaches it: the fix text
    itself, with the release from the table."""
    first = rules.first_ngc_release(rules.target_major())
    assert first is not None
    assert fix_for("transformer-engine", "ngc") == f"use an NGC release on CUDA 13 ({first} or later)"


@pytest.mark.parametrize(
    ("profile", "fix"),
    [("spark-bare", "use cuda-toolkit 13.x, or use the NGC image"), ("ngc-25.11", "use cuda-toolkit 13.x")],
)
def test_the_fix_for_a_toolkit_pinned_to_cuda_12_in_full(ctx, profile, fix):
    row = Row(
        "g1.declared",
        f"toolkit pin on {profile}",
        lambda c: sf.declared(c, "cuda-toolkit==12.8.1\n", profile=profile),
        "cuda-toolkit",
        FAIL,
        "use cuda-toolkit 13.x",
    )
    found = check(row, ctx)
    assert found is not None and found.fix == fix


def test_a_library_shipped_unread_is_shown_with_where_it_lies(ctx):
    """The INFO on a wheel whose ELF was not read names the bundled library, and its evidence says where
    the wheel ships it."""
    row = ROWS[[r.why for r in ROWS].index("a wheel that bundles libcudart.so.12, its ELF not read")]
    found = check(row, ctx)
    assert found is not None and found.evidence[-1] == "ships libcudart.so.12 (CUDA 12) in mylib/lib/"

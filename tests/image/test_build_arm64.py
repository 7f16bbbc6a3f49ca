"""The main job on the Spark's architecture: `sparkenv build --platform linux/arm64` end to end under qemu
emulation, on the arm64 NGC-like stand-in base (tests/arm64_standin.py), with real aarch64 wheels from the
public index (the client's configured one).

The user's path for a custom base, step by step: `sparkenv profiles new --from-image` reads the base
(its python3 runs under emulation), `sparkenv lock` resolves a small real project for that profile,
`sparkenv build --platform linux/arm64` builds, audits the image inside itself and tags it, `docker run
--platform linux/arm64` runs the gate in front of the workload, and `sparkenv audit --root` reads the
exported filesystem from outside. Two real aarch64 wheels that must not reach a Spark (one tied to CUDA
12, one CPU-only torch) each stop the build before the tag. tests/arm64_inside.py reads, inside the
emulated container, the facts sparkenv reads on aarch64.

Under SPARKENV_REQUIRE_DOCKER=1 (CI) a missing engine or missing qemu/binfmt fails these tests.
"""

from __future__ import annotations

import contextlib
import json
import os
import subprocess
import sys
import tarfile
from pathlib import Path

import arm64_standin as arm
import build_helpers as bh
import pytest

from sparkenv.core.datafiles import parse_toml

pytestmark = pytest.mark.docker
REPO = Path(__file__).resolve().parents[2]
NAME = "ngc-standin-arm64"  # the profile's name, as the user gives it to `profiles new`
AS_OF = "2026-11-30T00:00:00Z"  # --exclude-newer: the index as of this date, so the verdicts stay put
PROJECT = "pyyaml==6.0.2\nmsgpack==1.1.0\n"  # small, with compiled extensions: real aarch64 ELF files
# KvikIO's C++ library for CUDA 12: a 3 MB aarch64 wheel that requires nvidia-cufile-cu12 and
# cuda-toolkit 12.9. (nvidia-cuda-runtime-cu12 alone would not do: a runtime-library wheel nothing
# requires is residue, a WARN, and the image would be tagged.)
CUDA12 = "libkvikio-cu12==26.10.0"
CPU_TORCH = "torch==2.5.1"  # PyPI's aarch64 torch before 2.10 is a CPU-only build
EMULATED = 900  # seconds a build may take under qemu on a loaded 2-core machine


def cli(*args: str, cwd: Path, timeout: float = 300) -> subprocess.CompletedProcess[str]:
    """The real CLI as a user runs it, from the project's folder."""
    env = {k: v for k, v in os.environ.items() if k not in ("VIRTUAL_ENV", "NVIDIA_PYTORCH_VERSION")}
    return subprocess.run(
        [sys.executable, "-m", "sparkenv", *args],
        capture_output=True,
        text=True,
        timeout=timeout,
        cwd=cwd,
        env=env,
    )


def docker(*args: str, timeout: float = 300) -> subprocess.CompletedProcess[str]:
    return subprocess.run(["docker", *args], capture_output=True, text=True, timeout=timeout)


@pytest.fixture(scope="module")
def engine():  # type: ignore[no-untyped-def]
    client = bh.engine_or_skip()
    problem = arm.emulation_problem()
    if problem:
        if os.environ.get("SPARKENV_REQUIRE_DOCKER") == "1":
            pytest.fail(f"{problem}; SPARKENV_REQUIRE_DOCKER=1 makes this a failure")
        pytest.skip(problem)
    try:
        arm.ensure_standin(client)
    except arm.NotProvisioned as exc:
        pytest.fail(f"the arm64 stand-in base: {exc}")
    return client


@pytest.fixture(scope="module")
def profile(engine, tmp_path_factory: pytest.TempPathFactory) -> Path:  # type: ignore[no-untyped-def]
    """The profile of the arm64 base, written the way a user writes one for a custom base."""
    folder = tmp_path_factory.mktemp("arm64-profile")
    proc = cli("profiles", "new", NAME, "--from-image", arm.STANDIN_TAG, "-o", f"{NAME}.toml", cwd=folder)
    assert proc.returncode == 0, proc.stderr + proc.stdout
    assert f"wrote {NAME}.toml" in proc.stdout
    return folder / f"{NAME}.toml"


def test_the_profile_read_from_the_arm64_base_under_emulation(profile: Path) -> None:
    data = parse_toml(profile.read_text())
    assert data["platform"] == "linux/aarch64"  # from the image's configuration: arm64
    assert data["python"].startswith("3.11.")  # Debian bookworm's python3, run under qemu
    assert data["glibc"] == "2.36" and data["manylinux"] == "manylinux_2_36"
    assert data["cuda"] == arm.CUDA_VERSION
    assert data["provides"]["torch"] == bh.PROVIDES["torch"]
    assert data["env"]["NVIDIA_PYTORCH_VERSION"] == arm.NGC_RELEASE
    assert data["image"] == arm.STANDIN_TAG


def lock(project: Path, profile: Path, requirements: str, *extra: str) -> Path:
    """`sparkenv lock` of `requirements` for the arm64 profile, against the public index as of AS_OF."""
    (project / "requirements.txt").write_text(requirements)
    proc = cli(
        "lock",
        "requirements.txt",
        "--profile",
        str(profile),
        "--output-dir",
        "lockfiles",
        "--exclude-newer",
        AS_OF,
        *extra,
        cwd=project,
    )
    assert proc.returncode in (0, 1), proc.stderr
    pylock = project / "lockfiles" / f"pylock.{NAME}.toml"
    assert pylock.is_file(), proc.stdout + proc.stderr
    return pylock


def wheel_files(pylock: Path) -> dict[str, str]:
    return {
        p["name"]: p["wheels"][0]["url"].rsplit("/", 1)[-1]
        for p in parse_toml(pylock.read_text())["packages"]
    }


def build(
    project: Path, profile: Path, pylock: Path, tag: str, *extra: str
) -> subprocess.CompletedProcess[str]:
    return cli(
        "build",
        "--lock",
        str(pylock.relative_to(project)),
        "--profile",
        str(profile),
        "--platform",
        "linux/arm64",
        "--tag",
        tag,
        *extra,
        cwd=project,
        timeout=EMULATED,
    )


def untag(engine, ref: str) -> None:  # type: ignore[no-untyped-def]
    from docker.errors import ImageNotFound

    with contextlib.suppress(ImageNotFound):
        engine.images.remove(ref, force=True)


def tagged(engine, ref: str) -> bool:  # type: ignore[no-untyped-def]
    from docker.errors import ImageNotFound

    try:
        engine.images.get(ref)
        return True
    except ImageNotFound:
        return False


@pytest.fixture(scope="module")
def app(engine, profile: Path, tmp_path_factory: pytest.TempPathFactory):  # type: ignore[no-untyped-def]
    """A small real project locked for the arm64 profile and built into an image under emulation."""
    project = tmp_path_factory.mktemp("arm64-project")
    pylock = lock(project, profile, PROJECT)
    ref = "sparkenv-test/app-arm64:ok"
    untag(engine, ref)
    proc = build(project, profile, pylock, ref)
    return project, pylock, ref, proc


@pytest.mark.network
def test_a_real_project_locks_with_aarch64_wheels(app) -> None:  # type: ignore[no-untyped-def]
    _project, pylock, _ref, _proc = app
    files = wheel_files(pylock)
    assert set(files) == {"pyyaml", "msgpack"}, files
    for name, fname in files.items():
        assert fname.endswith("_aarch64.whl") and "-cp311-cp311-" in fname, (name, fname)


@pytest.mark.network
def test_build_for_arm64_tags_an_arm64_image_that_audited_itself(engine, app) -> None:  # type: ignore[no-untyped-def]
    _project, pylock, ref, proc = app
    assert proc.returncode == 0, proc.stderr[-3000:] + proc.stdout
    assert f"tagged {ref}" in proc.stdout and ", arm64;" in proc.stdout
    img = engine.images.get(ref)
    assert img.attrs["Architecture"] == "arm64"
    labels = img.labels
    assert labels["io.sparkenv.profile"] == NAME
    assert labels["io.sparkenv.lock-hash"].startswith("sha256:")
    assert labels["io.sparkenv.base-digest"] == engine.images.get(arm.STANDIN_TAG).id
    report = json.loads((pylock.parent / f"image-audit.{NAME}.json").read_text())
    assert report["schema"] == "sparkenv.core.report/1" and report["command"] == "audit"
    by = {(f["id"], f["subject"]): f["status"] for f in report["findings"]}
    # NGC's torch, read inside the arm64 image: its aarch64 libtorch_cuda.so needs libcudart.so.13
    assert by[("G1", "torch")] == "PASS", report["findings"]
    assert "FAIL" not in by.values(), report["findings"]


@pytest.mark.network
def test_the_gate_runs_in_front_of_the_workload_under_emulation(engine, app) -> None:  # type: ignore[no-untyped-def]
    _project, _pylock, ref, proc = app
    assert proc.returncode == 0, proc.stderr[-2000:]
    workload = (
        "import os, platform, sys, yaml, msgpack;"
        "print(platform.machine(), yaml.safe_load('a: 1')['a'], msgpack.unpackb(msgpack.packb([2]))[0],"
        " os.environ.get('NGC_STANDIN_PART')); sys.exit(7)"
    )
    run = docker("run", "--rm", "--platform", "linux/arm64", ref, "python3", "-c", workload)
    assert run.returncode == 7, run.stderr  # the workload's exit status, through the gate and NGC's script
    assert "aarch64 1 2 sourced" in run.stdout
    assert "entrypoint.d: 20-env.sh sourced" in run.stdout and "NGC stand-in, arm64" in run.stdout
    gate_lines = [ln for ln in run.stderr.splitlines() if ln[:3] in ("G1 ", "G3 ", "G7 ", "G9 ")]
    assert gate_lines, run.stderr
    assert not any(" FAIL: " in ln for ln in gate_lines), run.stderr


@pytest.mark.network
def test_audit_of_the_exported_arm64_filesystem_agrees_with_the_image(engine, app, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    project, pylock, ref, proc = app
    assert proc.returncode == 0, proc.stderr[-2000:]
    root = tmp_path / "root"
    root.mkdir()
    created = docker("create", "--platform", "linux/arm64", ref)
    assert created.returncode == 0, created.stderr
    cid = created.stdout.strip()
    try:
        exported = subprocess.Popen(["docker", "export", cid], stdout=subprocess.PIPE)
        with tarfile.open(fileobj=exported.stdout, mode="r|") as tf:
            for member in tf:
                if member.isdev() or member.name.startswith("dev/"):
                    continue
                tf.extract(member, root, filter="tar")
        assert exported.wait(timeout=300) == 0
    finally:
        docker("rm", "-f", cid)
    python = root / "usr/bin/python3.11"  # the image's interpreter: the same site folders as inside
    outside = cli(
        "audit", str(python), "--root", str(root), "--machine", "aarch64",
        "--lock", str(root / "opt/sparkenv/pylock.toml"), "--json",
        cwd=project, timeout=300,
    )  # fmt: skip
    assert outside.returncode == 0, outside.stderr + outside.stdout
    out = json.loads(outside.stdout)
    inside = json.loads((pylock.parent / f"image-audit.{NAME}.json").read_text())

    def judged(report: dict) -> dict[tuple[str, str], tuple[str, str]]:
        """G1 and G7 of every package, word for word; G9 of the base's packages against the lock by
        status (the lock's path differs, and outside there is no $NVIDIA_PYTORCH_VERSION to name the
        release; the container markers differ by design: only the live root has /proc and cgroups)."""
        out = {(f["id"], f["subject"]): (f["status"], f["summary"]) for f in report["findings"]}
        return {
            k: v if k[0] != "G9" else (v[0], "")
            for k, v in out.items()
            if k[0] in ("G1", "G7") or k in (("G9", "torch"), ("G9", "pytorch-triton"))
        }

    assert judged(out) == judged(inside), (out["findings"], inside["findings"])
    g1 = judged(out)[("G1", "environment")][1]
    # the project's two extensions and NGC's libtorch_cuda.so, read as aarch64 from outside
    assert "3 shared objects" in g1 and "environment aarch64, Python 3.11" in g1, g1
    assert judged(out)[("G1", "torch")][0] == "PASS"


@pytest.mark.network
def test_facts_read_inside_the_emulated_container(engine, app) -> None:  # type: ignore[no-untyped-def]
    """ELF machine, manylinux/glibc tags, the arm64 root's ld.so.cache and the CPU as the gate sees it,
    each read by sparkenv's own code inside the aarch64 container, beside the arm64 system's own answer."""
    _project, _pylock, ref, proc = app
    assert proc.returncode == 0, proc.stderr[-2000:]
    inside = REPO / "tests" / "arm64_inside.py"
    run = docker(
        "run", "--rm", "--platform", "linux/arm64", "-v", f"{inside}:/t/inside.py:ro",
        "--entrypoint", "python3", ref, "-I", "/t/inside.py",
    )  # fmt: skip
    assert run.returncode == 0, run.stderr[-3000:]
    facts = json.loads(run.stdout.strip().splitlines()[-1])
    # the CPU: uname as qemu answers it, which is what the gate reads
    assert facts["uname"] == "aarch64" and facts["host_machine"] == "aarch64"
    assert facts["gate"]["host"]["machine"] == "aarch64", facts["gate"]
    # ELF: the interpreter and every compiled extension are aarch64 (EM_AARCH64)
    assert facts["python_elf"] == "aarch64", facts["python"]
    elves = facts["extension_elves"]
    assert set(elves.values()) == {"aarch64"} and len(elves) == 3, elves  # _yaml, _cmsgpack, libtorch_cuda
    assert "libcudart.so.13" in facts["torch_cuda_needed"], facts["torch_cuda_needed"]
    # glibc and the wheel tags this interpreter installs: packaging's (sparkenv's) and pip's own agree
    assert facts["libc_ver"] == ["glibc", "2.36"] and facts["confstr"] == "glibc 2.36"
    own = [t for t in facts["sys_tags"] if t.startswith("cp311-cp311-")]
    assert "cp311-cp311-manylinux_2_36_aarch64" in own and "cp311-cp311-manylinux_2_37_aarch64" not in own
    assert not any("x86_64" in t for t in facts["sys_tags"])
    assert sorted(facts["pip_tags"]) == sorted(t for t in own if "linux" in t), (facts["pip_tags"], own)
    # ld.so.cache of the arm64 root: sparkenv's parser reads what the arm64 glibc's own ldconfig -p lists
    assert all("AArch64" in p for v in facts["ldconfig_p"].values() for p in v), facts["ldconfig_p"]
    assert facts["ldcache"] == {k: [p.split(" (")[0] for p in v] for k, v in facts["ldconfig_p"].items()}
    assert facts["ldcache"]["libcudart.so.13"] == [f"{arm.CUDA_LIB}/libcudart.so.13"]
    assert facts["libcudart"] == [f"{arm.CUDA_LIB}/libcudart.so.13", "ld.so.cache (/etc/ld.so.cache)"]
    # ... and the gate's static torch probe finds NGC's CUDA runtime through it
    torch = facts["gate"]["torch_static"]
    assert torch["machine"] == "aarch64" and torch["needed"] == [
        {
            "soname": "libcudart.so.13",
            "major": 13,
            "found": f"{arm.CUDA_LIB}/libcudart.so.13",
            "how": "ld.so.cache (/etc/ld.so.cache)",
        }
    ]
    # /proc/cpuinfo under qemu-user is the host's CPU (qemu 7.2 passes it through): the gate must not,
    # and does not, take the machine from it
    cpu = facts["cpuinfo"]
    if os.uname().machine == "x86_64":
        assert "CPU implementer" not in cpu and cpu.get("vendor_id"), cpu


@pytest.mark.network
def test_an_aarch64_wheel_tied_to_cuda_12_stops_the_build_before_the_tag(  # type: ignore[no-untyped-def]
    engine, profile: Path, tmp_path: Path
) -> None:
    """The lock says G1 FAIL; locked anyway (waived), the image's own audit under emulation refuses it."""
    pylock = lock(tmp_path, profile, CUDA12 + "\n", "--waive", "G1:*")
    files = wheel_files(pylock)
    assert files["libkvikio-cu12"].endswith("_aarch64.whl"), files
    ref = "sparkenv-test/app-arm64:cuda12"
    untag(engine, ref)
    proc = build(tmp_path, profile, pylock, ref, "-q")
    assert proc.returncode == 1, proc.stderr[-3000:] + proc.stdout
    fail = [ln for ln in proc.stdout.splitlines() if ln.startswith("G1 FAIL: libkvikio-cu12 ")]
    assert fail and "CUDA 12" in fail[0], proc.stdout
    assert f"NOT tagged {ref}" in proc.stdout
    assert not tagged(engine, ref)


@pytest.mark.network
def test_a_cpu_only_aarch64_torch_is_refused_before_anything_is_built(  # type: ignore[no-untyped-def]
    engine, profile: Path, tmp_path: Path
) -> None:
    """PyPI's torch 2.5.1 for aarch64 is a CPU-only build (its RECORD, read by range requests, holds no
    CUDA library): locking it for the arm64 profile, even allowed to replace the base's torch, is a G1
    FAIL naming torch and writes no lock; `sparkenv build requirements.txt` stops at its lock, names torch
    and builds nothing.

    Not done under emulation: a lock holding it, waived, built into the image. Installing that real
    90 MB wheel into the arm64 image under qemu took over 7 minutes on the loaded 2-core machine, past
    the CI budget; the image audit's CPU-only torch judgement is the same rule (rules/g1.py) that the
    x86_64 audit tests exercise."""
    (tmp_path / "requirements.txt").write_text(CPU_TORCH + "\n")
    locked = cli(
        "lock", "requirements.txt", "--profile", str(profile), "--allow-replace", "torch",
        "--exclude-newer", AS_OF, cwd=tmp_path,
    )  # fmt: skip
    assert locked.returncode == 1, locked.stderr[-3000:] + locked.stdout
    fail = [ln for ln in locked.stdout.splitlines() if ln.startswith("G1 FAIL: torch ")]
    assert fail and "CPU-only build" in fail[0], locked.stdout
    assert not (tmp_path / "lockfiles").exists()
    ref = "sparkenv-test/app-arm64:cpu-torch"
    untag(engine, ref)
    built = cli(
        "build", "requirements.txt", "--profile", str(profile), "--platform", "linux/arm64", "--tag", ref,
        cwd=tmp_path, timeout=EMULATED,
    )  # fmt: skip
    assert built.returncode == 1, built.stderr[-3000:] + built.stdout
    assert "nothing was built" in built.stdout
    assert any(ln.startswith("G9 FAIL: torch==2.5.1 ") for ln in built.stdout.splitlines()), built.stdout
    assert not tagged(engine, ref) and not (tmp_path / "lockfiles").exists()

"""The lock and the audit judge one wheel with one function: real wheels holding nvcc-built kernels and
gcc-built extensions, served from a local index on 127.0.0.1, locked by the real uv; then the very same
wheel files installed (unzipped into site-packages, their RECORD with them) and audited. Each G1 and G7
verdict at lock must be the audit's on the installed wheel."""

from __future__ import annotations

import zipfile

import pytest
from artifacts import Index, serve

X86 = "cp312-cp312-manylinux_2_17_x86_64"

# package -> (G7 at lock and at audit, for the GB10): nvcc 13 builds of tests/kernel_helpers.BUILDS
KERNEL_WHEELS = {
    "ops-hopper": ("sm90", "FAIL"),  # sm_90 cubins only, no PTX: nothing runs on SM121
    "ops-spark": ("sm120", "PASS"),  # sm_120 runs on the whole 12.x family
    "ops-spark-arch": ("sm121a", "PASS"),  # sm_121a: exactly the GB10
    "ops-blackwell-a": ("sm120a", "FAIL"),  # sm_120a: arch-specific, not for 12.1
    "ops-fat": ("fat", "PASS"),  # sm_80 + sm_90 + sm_120 + compute_120
}


@pytest.fixture(scope="module")
def wheels(tmp_path_factory: pytest.TempPathFactory, kernels, elves):
    ix = Index(tmp_path_factory.mktemp("index"))
    for name, (build, _) in KERNEL_WHEELS.items():
        mod = name.replace("-", "_")
        ix.wheel(
            name, "1.0", tag=X86, requires=["torch"], files={f"{mod}/_C.so": kernels.so(build).read_bytes()}
        )
    # G1 from what the members link, read the same way
    ix.wheel(
        "runtime-old",
        "1.0",
        tag=X86,
        requires=["torch"],
        files={"runtime_old/_C.so": elves.linked(("libcudart.so.12",)).read_bytes()},
    )
    ix.wheel(
        "runtime-new",
        "1.0",
        tag=X86,
        requires=["torch"],
        files={"runtime_new/_C.so": elves.linked(("libcudart.so.13",)).read_bytes()},
    )
    # built for another CPU than the wheel's tag says
    ix.wheel(
        "wrong-cpu",
        "1.0",
        tag=X86,
        requires=["torch"],
        files={"wrong_cpu/_C.so": elves.linked(("libcudart.so.13",), arch="aarch64").read_bytes()},
    )
    server = serve(ix, ranges=True)
    yield ix
    server.shutdown()


def _by(r) -> dict[tuple[str, str], dict]:
    return {(f["id"], f["subject"]): f for f in r.json()["findings"]}


NAMES = [*KERNEL_WHEELS, "runtime-old", "runtime-new", "wrong-cpu"]


def test_lock_and_audit_give_one_verdict_per_wheel(run, wheels, env, tmp_path, clean_root):
    req = tmp_path / "requirements.txt"
    req.write_text("".join(f"{n}\n" for n in NAMES))
    cache = {"UV_CACHE_DIR": str(tmp_path / "uv"), "SPARKENV_CACHE_DIR": str(tmp_path / "sparkenv")}
    args = ("--index-url", wheels.url, "--platform", "linux/amd64", "--output-dir", str(tmp_path / "o"))
    locked = run("lock", str(req), *args, "--json", env=cache)
    assert locked.code == 1, locked.out + locked.err
    at_lock = _by(locked)
    # the same files, installed: a wheel is unzipped into site-packages with its RECORD
    for fname in sorted((wheels.root / "files").glob("*.whl")):
        with zipfile.ZipFile(fname) as zf:
            zf.extractall(env.site)
    audited = run("audit", str(env.prefix), "--root", str(clean_root), "--json")
    at_audit = _by(audited)
    for name, (build, want) in KERNEL_WHEELS.items():
        lock_g7, audit_g7 = at_lock[("G7", name)], at_audit[("G7", name)]
        assert lock_g7["status"] == audit_g7["status"] == want, (name, build, lock_g7, audit_g7)
        assert "read from its wheel" in lock_g7["summary"]
        # the audit's words, said of the wheel
        assert audit_g7["summary"].split(" (", 1)[0] in lock_g7["summary"]
    for name, want in (("runtime-old", "FAIL"), ("runtime-new", "PASS"), ("wrong-cpu", "FAIL")):
        lock_g1, audit_g1 = at_lock[("G1", name)], at_audit[("G1", name)]
        assert lock_g1["status"] == audit_g1["status"] == want, (name, lock_g1, audit_g1)
        assert bool(lock_g1["fix"]) == bool(audit_g1["fix"]) == (want == "FAIL")
    assert "links libcudart.so.12" in at_lock[("G1", "runtime-old")]["summary"]
    assert "aarch64 shared object" in at_lock[("G1", "wrong-cpu")]["summary"]
    census = at_lock[("G7", "kernels")]
    assert census["status"] == "INFO" and "in 5 wheels" in census["summary"], census

"""`sparkenv lock` judges classes of packages, not names: an sdist by its own build files, a build uv
cannot do as a finding. Real sdists served from a local index on 127.0.0.1, resolved by the real uv."""

from __future__ import annotations

import random

import pytest
from artifacts import Index, serve

_TORCH_EXT_SETUP = (
    "from setuptools import setup\n"
    "from torch.utils.cpp_extension import BuildExtension, CUDAExtension\n\n"
    "setup(ext_modules=[CUDAExtension('k', ['csrc/k.cu'])], cmdclass={'build_ext': BuildExtension})\n"
)
# An in-tree build backend that imports torch without declaring it: the build fails for real in uv's
# isolated environment, as a setup.py that does `import torch` does.
_BACKEND_NEEDS_TORCH = {
    "pyproject.toml": '[build-system]\nrequires = []\nbuild-backend = "backend"\nbackend-path = ["."]\n',
    "backend.py": "import torch  # noqa: F401  (needed to build, not declared)\n",
    "setup.py": _TORCH_EXT_SETUP,
    "csrc/k.cu": "__global__ void k() {}\n",
}


@pytest.fixture(scope="module")
def index(tmp_path_factory: pytest.TempPathFactory, elves):
    ix = Index(tmp_path_factory.mktemp("index"))
    ix.wheel("numpy", "2.1.0", tag="cp312-cp312-manylinux_2_17_aarch64")
    ix.sdist(
        "myext-torch", "1.0", files={"setup.py": _TORCH_EXT_SETUP, "csrc/k.cu": "__global__ void k(){}\n"}
    )
    ix.sdist(
        "cmake-kernels",
        "1.0",
        files={"CMakeLists.txt": "cmake_minimum_required(VERSION 3.26)\nproject(k LANGUAGES CXX CUDA)\n"},
    )
    ix.sdist(
        "torch-build-req",
        "1.0",
        files={
            "pyproject.toml": '[build-system]\nrequires = ["setuptools", "torch>=2.4"]\n'
            'build-backend = "setuptools.build_meta"\n'
        },
    )
    # CUDA sources compiled only at run time (JIT), a plain setup.py: nothing compiles at install
    ix.sdist("jit-kernels", "1.0", files={"jit_kernels/k.cu": "__global__ void k(){}\n"})
    ix.sdist("puresdist", "1.0")
    optin = "import os\nfrom setuptools import setup\n\next = []\nif os.getenv('BUILD_EXT') == '1':\n"
    optin += (
        "    from torch.utils.cpp_extension import CUDAExtension\n\n    ext.append(CUDAExtension('k', []))\n"
    )
    ix.sdist("optin-ext", "1.0", files={"setup.py": optin + "setup(ext_modules=ext)\n"})
    ix.sdist("needs-torch-to-build", "1.0", ["torch>=99"], files=_BACKEND_NEEDS_TORCH, metadata_version="2.1")
    ix.wheel("app", "1.0", requires=["needs-torch-to-build", "numpy"])
    # a placeholder whose build downloads the real wheel from another index (here one that is not there)
    stub = {
        "pyproject.toml": '[build-system]\nrequires = []\nbuild-backend = "backend"\nbackend-path = ["."]\n',
        "backend.py": "import sys\n\n\ndef _fail(*args, **kwargs):\n"
        "    print('This is a placeholder. Try: pip install --extra-index-url http://127.0.0.1:9/simple/ "
        "real-libs', file=sys.stderr)\n"
        "    raise OSError('urlopen error [Errno 111] Connection refused')\n\n\n"
        "get_requires_for_build_wheel = build_wheel = prepare_metadata_for_build_wheel = _fail\n",
    }
    ix.sdist("real-libs", "1.0", files=stub, metadata_version="2.1")
    ix.wheel("uses-real-libs", "1.0", requires=["real-libs==1.0"])
    # one native library per CUDA release, picked at run time: none for CUDA 13 in 1.0, one in 2.0
    arm = "cp312-cp312-manylinux_2_17_aarch64"
    per_release = {f"quantlib/libql_cuda{v}.so": b"\x7fELF" for v in ("118", "121", "126", "128", "129")}
    ix.wheel("quantlib", "1.0", tag=arm, files=per_release)
    ix.wheel("quantlib", "2.0", tag=arm, files={**per_release, "quantlib/libql_cuda130.so": b"\x7fELF"})
    ix.wheel("bundles-cudart", "1.0", tag=arm, files={"bundles_cudart/libcudart.so.12": b"\x7fELF"})
    # a CUDA 12 package pulled in only through an extra another package asks for
    ix.wheel("cupy-cuda12x", "13.0.0", tag=arm)
    ix.wheel("rayish", "2.0", requires=['cupy-cuda12x; extra == "cgraph"'])
    ix.wheel("servery", "1.0", requires=["rayish[cgraph]>=2"])
    # extensions built against torch: their own shared object links a CUDA 12 or a CUDA 13 runtime
    # (real ELF files compiled here); one whose object is past the read budget
    cu12, cu13 = (elves.linked((f"libcudart.so.{m}",), arch="aarch64") for m in (12, 13))
    ix.wheel("alpha-ops", "1.0", tag=arm, requires=["torch"], files={"alpha_ops/_C.so": cu12.read_bytes()})
    ix.wheel("beta-ops", "1.0", tag=arm, requires=["torch"], files={"beta_ops/_C.so": cu13.read_bytes()})
    # past the per-file download budget: bytes that do not deflate (the budget counts compressed bytes)
    huge = cu12.read_bytes() + random.Random(22).randbytes(65 * 1024**2)
    ix.wheel("gamma-ops", "1.0", tag=arm, requires=["torch"], files={"gamma_ops/_C.so": huge})
    server = serve(ix, ranges=True)
    yield ix
    server.shutdown()


@pytest.fixture
def lock(run, index, tmp_path):
    env = {"UV_CACHE_DIR": str(tmp_path / "uv"), "SPARKENV_CACHE_DIR": str(tmp_path / "sparkenv")}

    def _lock(text: str, *args: str, extra_env: dict[str, str] | None = None):
        req = tmp_path / "requirements.txt"
        req.write_text(text)
        out = tmp_path / "out"
        return run(
            "lock",
            str(req),
            "--index-url",
            index.url,
            "--output-dir",
            str(out),
            *args,
            env={**env, **(extra_env or {})},
        )

    return _lock


def _by(r) -> dict[tuple[str, str], dict]:
    return {(f["id"], f["subject"]): f for f in r.json()["findings"]}


def test_sdist_that_compiles_against_torch_fails_by_its_own_build_files(lock, tmp_path):
    r = lock("myext-torch\ncmake-kernels\ntorch-build-req\njit-kernels\npuresdist\noptin-ext\n", "--json")
    assert r.code == 1, r.out + r.err
    found = _by(r)
    ext, cmake, breq = (
        found[("G2", "myext-torch")],
        found[("G2", "cmake-kernels")],
        found[("G2", "torch-build-req")],
    )
    assert ext["status"] == cmake["status"] == breq["status"] == "FAIL"
    assert "setup.py uses torch.utils.cpp_extension" in ext["summary"]
    assert "cmakelists.txt names LANGUAGES CXX CUDA" in cmake["summary"]
    assert "build-system requires torch" in breq["summary"]
    # the fix fits the profile: ngc-25.11 provides torch, so building against it is one way; no
    # "use an NGC profile" on an NGC profile
    assert "--no-build-isolation myext-torch==1.0" in ext["fix"] and "NGC profile" not in ext["fix"]
    # CUDA sources without a build that compiles them, and a pure-Python sdist: WARN, as before
    assert found[("G2", "jit-kernels")]["status"] == "WARN"
    assert (
        found[("G2", "puresdist")]["status"] == "WARN"
        and "pure-Python" in found[("G2", "puresdist")]["summary"]
    )
    # an extension built only when the environment asks for it (BUILD_EXT=1): nothing compiles by default
    optin = found[("G2", "optin-ext")]
    assert optin["status"] == "WARN" and "only when asked" in optin["summary"]
    assert not (tmp_path / "out").exists()


def test_fix_on_a_profile_without_torch_does_not_offer_the_base(lock):
    r = lock("myext-torch\n", "--profile", "spark-bare", "--json")
    fix = _by(r)[("G2", "myext-torch")]["fix"]
    assert r.code == 1 and "base's torch" not in fix and "wheel for aarch64" in fix


def test_a_build_uv_cannot_do_is_a_finding_and_the_rest_is_still_judged(lock, tmp_path):
    r = lock("app\n", "--json")
    assert r.code == 1, r.out + r.err
    found = _by(r)
    g2 = found[("G2", "needs-torch-to-build")]
    assert g2["status"] == "FAIL"
    assert "No module named 'torch'" in g2["summary"] and "app → needs-torch-to-build" in g2["summary"]
    assert "compiles CUDA/C++ against torch" in g2["summary"] and g2["fix"]
    # what it requires (read from its sdist) is still held to the base: torch>=99 is not the base's torch
    assert found[("G9", "torch")]["status"] == "FAIL" and ">=99" in found[("G9", "torch")]["summary"]
    # the rest of the set was resolved and judged
    assert r.json()["context"]["packages"] == 2  # app and numpy
    # one line about the missing package: G2's, not also a G9 "not closed" about app
    assert not [f for f in r.json()["findings"] if "needs-torch-to-build is not in the lock" in f["summary"]]
    # uv's own output (its traceback) only under SPARKENV_DEBUG=1
    assert "Traceback" not in r.err and "Traceback" not in r.out
    assert not (tmp_path / "out").exists()
    debug = lock("app\n", "--json", extra_env={"SPARKENV_DEBUG": "1"})
    assert debug.code == 1 and "Traceback" in debug.err


def test_lock_reads_each_binary_wheels_file_list_as_the_audit_reads_record(lock, index):
    r = lock("quantlib==1.0\n", "--json")
    g1 = _by(r)[("G1", "quantlib")]
    assert r.code == 1 and g1["status"] == "FAIL", r.out + r.err
    assert "no CUDA 13 library" in g1["summary"] and "libql_cuda118.so … libql_cuda129.so" in g1["summary"]
    assert "torch.version.cuda" in g1["summary"] and g1["fix"]
    ok = lock("quantlib==2.0\n", "--json")
    assert ok.code == 0 and _by(ok)[("G1", "quantlib")]["status"] == "PASS"
    assert "libql_cuda130.so" in _by(ok)[("G1", "quantlib")]["summary"]
    # a bundled CUDA 12 library is said, not passed: whether it is linked is the audit's to read
    info = lock("bundles-cudart\n", "--json")
    assert _by(info)[("G1", "bundles-cudart")]["status"] == "INFO"
    assert "libcudart.so.12" in _by(info)[("G1", "bundles-cudart")]["summary"]


def test_chains_pass_through_the_extras_that_pulled_a_package_in(lock):
    r = lock("servery\n", "--json")
    g1 = _by(r)[("G1", "cupy-cuda12x")]
    assert r.code == 1 and g1["status"] == "FAIL"
    assert "servery → rayish[cgraph] → cupy-cuda12x" in g1["summary"], g1["summary"]
    # the fix fits the profile: on an NGC profile, "use the NGC image" is no way out
    assert "cupy-cuda13x" in g1["fix"] and "NGC image" not in g1["fix"]
    bare = lock("servery\n", "--profile", "spark-bare", "--json")
    assert "or use the NGC image" in _by(bare)[("G1", "cupy-cuda12x")]["fix"]
    root = lock("rayish[cgraph]\n", "--json")
    assert "rayish[cgraph] → cupy-cuda12x" in _by(root)[("G1", "cupy-cuda12x")]["summary"]


def test_lock_reads_what_a_gpu_extensions_shared_objects_link(lock):
    r = lock("alpha-ops\n", "--json")
    g1 = _by(r)[("G1", "alpha-ops")]
    assert r.code == 1 and g1["status"] == "FAIL", r.out + r.err
    assert "alpha_ops/_C.so links libcudart.so.12" in g1["summary"] and "read from its wheel" in g1["summary"]
    ok = lock("beta-ops\n", "--json")
    assert ok.code == 0 and _by(ok)[("G1", "beta-ops")]["status"] == "PASS"
    # past the budget: said, never passed
    big = lock("gamma-ops\n", "--json")
    g1 = _by(big)[("G1", "gamma-ops")]
    assert g1["status"] == "INFO" and "read budget" in g1["summary"] and "sparkenv audit" in g1["summary"]


def test_a_placeholder_that_downloads_from_another_index_names_that_index(lock):
    r = lock("uses-real-libs\n", "--json")
    g2 = _by(r)[("G2", "real-libs")]
    assert r.code == 1 and g2["status"] == "FAIL", r.out + r.err
    assert "Connection refused" in g2["summary"] and "uses-real-libs → real-libs" in g2["summary"]
    assert "--extra-index-url http://127.0.0.1:9/simple/" in g2["fix"]

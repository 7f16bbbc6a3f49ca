"""`sparkenv lock` sees the base, reads every file's metadata and writes only closed locks.

Real parts: wheels built here, a PEP 503 index over HTTP on 127.0.0.1 (with and without PEP 658 files,
with and without range support), the real `uv pip compile`, the CLI as a process.
"""

from __future__ import annotations

import pytest
from artifacts import Index, serve
from packaging.pylock import Pylock

from sparkenv.core.datafiles import parse_toml

ARM = "cp312-cp312-manylinux_2_28_aarch64"
NGC_TORCH = "2.10.0a0+b558c986e8.nv25.11"  # what the ngc-25.11 profile provides


@pytest.fixture(scope="session")
def index(tmp_path_factory: pytest.TempPathFactory):
    ix = Index(tmp_path_factory.mktemp("resolver-index"))
    ix.wheel(
        "torch", "2.11.0", tag=ARM, requires=["cuda-toolkit[cudart]==13.0.2; platform_system == 'Linux'"]
    )
    ix.wheel("torch", "2.5.1", tag=ARM, requires=["filelock"])  # an old aarch64 build: no CUDA at all
    ix.wheel("cuda-toolkit", "13.0.2", tag="py3-none-manylinux_2_27_aarch64")
    ix.wheel("filelock", "3.20.0")
    # an inference server whose release pins an exact torch newer than the image's
    ix.wheel("servr", "0.9.0", requires=["torch>=2.4"])
    ix.wheel("servr", "1.0.0", requires=["torch==2.11.0", "filelock"])
    ix.wheel("servr-app", "1.0", requires=["servr>=1.0"])
    # a tensor library asking torch>=X.Y.0 where the image ships X.Y.0a0 (a pre-release: not accepted)
    ix.wheel("tensorlib", "3.0", requires=["torch>=2.10.0"])
    ix.wheel("oklib", "1.0", requires=["torch>=2.9", "triton>=3.0; platform_system == 'Linux'"])
    ix.wheel("needs-new-triton", "1.0", requires=["triton>=3.6"])  # the image has pytorch-triton 3.5.0
    ix.wheel("torchvision", "0.26.0", tag=ARM, requires=["torch==2.11.0"])
    # extras are followed: withextra[gpu] needs torch only through its extra
    ix.wheel("withextra", "1.0", requires=["filelock", "torch==2.11.0; extra == 'gpu'"])
    ix.wheel("torchvision", "0.20.1", tag=ARM, requires=["torch==2.5.1"])
    # fallbacks: the newest release has no file for aarch64, or a requirement elsewhere caps it
    ix.sdist("oldserver", "1.0")
    ix.wheel("oldserver", "2.0", tag="py3-none-manylinux_2_28_x86_64")
    ix.wheel("libx", "1.0")
    ix.wheel("libx", "2.0")
    ix.wheel("capper", "1.0", requires=["libx<2"])
    server = serve(ix)
    yield ix
    server.shutdown()


@pytest.fixture(scope="session")
def caches(tmp_path_factory: pytest.TempPathFactory) -> dict[str, str]:
    root = tmp_path_factory.mktemp("resolver-caches")
    return {"UV_CACHE_DIR": str(root / "uv"), "SPARKENV_CACHE_DIR": str(root / "sparkenv")}


@pytest.fixture
def lock(run, index, caches, tmp_path):
    def _lock(text: str, *args: str, url: str | None = None, env: dict[str, str] | None = None):
        req = tmp_path / "requirements.txt"
        req.write_text(text)
        return run(
            "lock", str(req), "--index-url", url or index.url, "--output-dir", str(tmp_path / "out"),
            "--json", *args, env={**caches, **(env or {})},
        )  # fmt: skip

    return _lock


def _by(r) -> dict[tuple[str, str], dict]:
    return {(f["id"], f["subject"]): f for f in r.json()["findings"]}


def _nothing_written(tmp_path) -> bool:
    out = tmp_path / "out"
    return not out.exists() or not list(out.iterdir())


def test_exact_pin_newer_than_the_base_fails_with_chain_base_version_and_fix(lock, tmp_path):
    r = lock("servr-app\n")
    assert r.code == 1, r.out + r.err
    g9 = _by(r)[("G9", "torch")]
    assert g9["status"] == "FAIL"
    assert "servr-app → servr → torch==2.11.0" in g9["summary"] and NGC_TORCH in g9["summary"]
    assert "--allow-replace torch" in g9["fix"] and "another profile" in g9["fix"]
    assert _nothing_written(tmp_path)


def test_a_range_the_base_prerelease_does_not_meet_fails(lock, tmp_path):
    r = lock("tensorlib\n")  # torch>=2.10.0 does not accept 2.10.0a0+…
    g9 = _by(r)[("G9", "torch")]
    assert r.code == 1 and g9["status"] == "FAIL" and "tensorlib → torch>=2.10.0" in g9["summary"]
    assert _nothing_written(tmp_path)


def test_ranges_the_base_meets_pass_and_the_triton_alias_is_judged_by_the_base_name(lock, tmp_path):
    r = lock("oklib\n")
    assert r.code == 0, r.out
    found = _by(r)
    assert (
        found[("G9", "torch")]["status"] == "PASS"
        and "oklib → torch excluded" in found[("G9", "torch")]["summary"]
    )
    r = lock("needs-new-triton\n")  # triton>=3.6 against the base's pytorch-triton 3.5.0+gitde3506d2
    g9 = _by(r)[("G9", "pytorch-triton")]
    assert r.code == 1 and g9["status"] == "FAIL" and "pytorch-triton 3.5.0+gitde3506d2" in g9["summary"]


def test_allow_replace_resolves_the_base_package_and_records_it(lock, tmp_path):
    r = lock("servr-app\n", "--allow-replace", "torch")
    assert r.code == 0, r.out + r.err
    data = parse_toml((tmp_path / "out" / "pylock.ngc-25-11.toml").read_text())
    Pylock.from_dict(data)
    versions = {p["name"]: p["version"] for p in data["packages"]}
    assert versions["torch"] == "2.11.0" and data["tool"]["sparkenv"]["allow-replace"] == ["torch"]
    assert "torch" not in data["tool"]["sparkenv"]["excluded"]
    r = lock("servr-app\n", "--allow-replace", "numpy")
    assert r.code == 2 and "does not provide it" in r.err and len(r.err.strip().splitlines()) == 1


def test_extras_are_followed_into_the_base_check(lock, tmp_path):
    assert lock("withextra\n").code == 0
    r = lock("withextra[gpu]\n")
    assert r.code == 1 and "withextra → torch==2.11.0" in _by(r)[("G9", "torch")]["summary"]


def test_nothing_to_lock_beyond_the_base_writes_a_valid_empty_lock(lock, tmp_path):
    r = lock("torch>=2.9\n")
    assert r.code == 0, r.out + r.err
    pylock = tmp_path / "out" / "pylock.ngc-25-11.toml"
    data = parse_toml(pylock.read_text())
    Pylock.from_dict(data)
    assert data["packages"] == [] and "nothing to lock beyond the base" in r.out


def test_cpu_only_torch_on_the_bare_target_is_g1_fail_with_the_index_to_use(lock, tmp_path):
    r = lock("torch==2.5.1\n", "--profile", "spark-bare")
    g1 = _by(r)[("G1", "torch")]
    assert r.code == 1 and g1["status"] == "FAIL" and "CPU-only build" in g1["summary"]
    assert "download.pytorch.org/whl/cu130" in g1["fix"] and _nothing_written(tmp_path)
    r = lock("torchvision==0.20.1\n", "--profile", "spark-bare")  # tied to a CPU-only torch
    tv = _by(r)[("G1", "torchvision")]
    assert r.code == 1 and tv["status"] == "FAIL" and "torch 2.5.1, a CPU-only build" in tv["summary"]
    r = lock("torch==2.11.0\ntorchvision\n", "--profile", "spark-bare")
    assert r.code == 0, r.out
    found = _by(r)
    assert found[("G1", "torch")]["status"] == "PASS" and "cuda-toolkit" in found[("G1", "torch")]["summary"]
    # torchvision shows no CUDA of its own: it is tied exactly to a CUDA torch
    assert found[("G1", "torchvision")]["status"] == "PASS"


def test_every_written_lock_is_closed(lock, tmp_path):
    r = lock("servr==0.9.0\n", "--profile", "spark-bare")
    assert r.code == 0, r.out
    closure = _by(r)[("G9", "closure")]
    assert closure["status"] == "PASS" and "the resolved set is closed" in closure["summary"]


def test_an_old_fallback_warns_with_the_reason(lock, tmp_path):
    r = lock("oldserver\n", "--profile", "spark-bare")
    w = _by(r)[("G9", "oldserver")]
    assert (
        r.code == 0
        and w["status"] == "WARN"
        and "oldserver 1.0 (via oldserver) is a fallback" in w["summary"]
    )
    assert "2.0: none of its 1 wheel(s) fits aarch64-manylinux_2_39 and it has no sdist" in w["summary"]
    r = lock("libx\ncapper\n")
    w = _by(r)[("G9", "libx")]
    assert w["status"] == "WARN" and "capper → libx<2 excludes 2.0" in w["summary"]
    r = lock("libx<2\n")  # the user's own cap is a choice, not a fallback
    assert ("G9", "libx") not in _by(r)

"""A GPU-capable distribution built without CUDA for the Spark, by class rather than by name: its
Requires-Dist asks for CUDA libraries on x86_64 only, and its aarch64 wheel requires, ships and links none
(torch before 2.11 had this shape; speech and inference engines ship it too). `sparkenv lock` says so
(a G1 WARN with the evidence); a package that also asks for CUDA on aarch64, or never asks for it, is
left alone. Real wheels on a loopback index, the real `uv pip compile`; and the audit of the installed
distribution gives the same line (one function, g1_installed.dist_finding)."""

from __future__ import annotations

import pytest
from artifacts import Index, serve

ARM, X86 = "cp312-cp312-manylinux_2_28_aarch64", "cp312-cp312-manylinux_2_28_x86_64"
ON_X86 = 'platform_machine == "x86_64" and platform_system == "Linux"'


@pytest.fixture(scope="module")
def index(tmp_path_factory: pytest.TempPathFactory):
    ix = Index(tmp_path_factory.mktemp("index"))
    so = {"gpuengine/_engine.so": b"\x7fELF not read: not a GPU package"}
    for tag in (ARM, X86):
        ix.wheel(
            "gpuengine", "1.0", tag=tag, requires=[f"nvidia-cublas-cu12>=12; {ON_X86}", "numpy"], files=so
        )
        both = [f"nvidia-cublas-cu12>=12; {ON_X86}", 'nvidia-cublas>=13; platform_machine == "aarch64"']
        ix.wheel("cudaboth", "1.0", tag=tag, requires=both)
        ix.wheel("cpuengine", "1.0", tag=tag, requires=["numpy"], files={"cpuengine/_c.so": b"\x7fELF"})
    ix.wheel("numpy", "2.1.0", tag="cp312-cp312-manylinux_2_17_aarch64")
    ix.wheel("nvidia-cublas", "13.0.0.19", tag="py3-none-manylinux_2_27_aarch64")
    ix.wheel("nvidia-cublas-cu12", "12.8.4.1", tag="py3-none-manylinux_2_27_x86_64")
    server = serve(ix)
    yield ix
    server.shutdown()


def test_lock_warns_of_a_cpu_only_build_of_a_gpu_capable_package(run, index, tmp_path):
    req = tmp_path / "requirements.txt"
    req.write_text("gpuengine\ncudaboth\ncpuengine\n")
    env = {"UV_CACHE_DIR": str(tmp_path / "uv"), "SPARKENV_CACHE_DIR": str(tmp_path / "sparkenv")}
    r = run("lock", str(req), "--index-url", index.url, "--profile", "spark-bare", "--output-dir",
            str(tmp_path / "out"), "--json", env=env)  # fmt: skip
    assert r.code == 0, r.out + r.err
    report = r.json()
    by = {(f["id"], f["subject"]): f for f in report["findings"]}
    f = by[("G1", "gpuengine")]
    assert f["status"] == "WARN" and "CPU-only build for aarch64" in f["summary"]
    assert any("nvidia-cublas-cu12>=12 on x86_64 only" in e for e in f["evidence"]), f
    assert any(e.startswith("gpuengine-1.0-cp312-cp312-manylinux_2_28_aarch64") for e in f["evidence"])
    assert report["verdict"] == "ready-with-warnings"
    for other in ("cudaboth", "cpuengine"):  # CUDA asked for on aarch64 too; never asked for at all
        assert by.get(("G1", other), {}).get("status") != "WARN", by.get(("G1", other))

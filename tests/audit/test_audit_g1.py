"""G1 on synthetic environments holding real compiled shared objects."""

from __future__ import annotations

import os
from pathlib import Path

from audit_layouts import LINUX, cuda13_torch


def test_cuda12_runtime_pulled_in_by_a_cu128_torch_fails_with_the_chain(env, elves, run, clean_root):
    env.add(
        "nvidia-cuda-runtime-cu12",
        "12.8.90",
        files={"nvidia/cuda_runtime/lib/libcudart.so.12": elves.stub("libcudart.so.12")},
    )
    env.add(
        "torch",
        "2.9.1+cu128",
        requires=[f"nvidia-cuda-runtime-cu12==12.8.90{LINUX}"],
        files={"torch/lib/libtorch_cuda.so": elves.linked(("libcudart.so.12",))},
    )
    r = run("audit", str(env.prefix), "--root", str(clean_root))
    assert r.code == 1, r.out
    torch = r.line("G1", "torch 2.9.1+cu128")
    assert (
        torch.startswith("G1 FAIL: ")
        and "needs CUDA 12: torch/lib/libtorch_cuda.so links libcudart.so.12" in torch
    )
    assert "download.pytorch.org/whl/cu130" in torch
    rt = r.line("G1", "nvidia-cuda-runtime-cu12 12.8.90")
    assert rt.startswith("G1 FAIL: ") and "required by torch" in rt and "libcudart.so.12" in rt
    assert r.lines[-1].startswith("verdict: blocked")


def test_real_cuda13_layout_gives_no_false_alarm_from_so12_names(env, elves, run, clean_root):
    cuda13_torch(env, elves)
    r = run("audit", str(env.prefix), "--root", str(clean_root))
    assert r.code == 0, r.out
    assert not [ln for ln in r.lines if ln.startswith("G1 FAIL")]
    assert r.line("G1", "torch 2.11.0").startswith("G1 PASS: torch 2.11.0 needs CUDA 13")
    assert r.line("G1", "nvidia-cufft 12.0.0.61").startswith("G1 PASS")


def test_unrequired_cuda12_library_next_to_cuda13_is_residue(env, elves, run, clean_root):
    cuda13_torch(env, elves)
    env.add(
        "nvidia-cublas-cu12",
        "12.8.4.1",
        files={"nvidia/cublas/lib/libcublas.so.12": elves.stub("libcublas.so.12")},
    )
    r = run("audit", str(env.prefix), "--root", str(clean_root))
    line = r.line("G1", "nvidia-cublas-cu12")
    assert line.startswith("G1 WARN: ") and "residue" in line and "pip uninstall nvidia-cublas-cu12" in line
    assert r.code == 0
    assert run("audit", str(env.prefix), "--root", str(clean_root), "--strict").code == 1


def test_cpu_only_torch_fails_by_label_and_by_missing_libtorch_cuda(tmp_path, elves, run, clean_root):
    from conftest import make_env

    for version, files in (
        ("2.9.1+cpu", {"torch/lib/libtorch_cpu.so": elves.linked()}),
        ("2.11.0", {"torch/lib/libtorch_cpu.so": elves.linked()}),
    ):
        env = make_env(tmp_path / version, elves)
        env.add("torch", version, files=files)
        r = run("audit", str(env.prefix), "--root", str(clean_root))
        line = r.line("G1", f"torch {version}")
        assert line.startswith("G1 FAIL: ") and "CPU-only" in line, line
        assert r.code == 1


def test_x86_64_object_in_an_aarch64_environment_fails(arm_env, elves, run, clean_root):
    arm_env.add(
        "fastkernels",
        "1.0",
        files={
            "fastkernels/_ops.so": elves.linked(("libcudart.so.13",), arch="x86_64"),
            "fastkernels/_ok.so": elves.linked(("libcudart.so.13",), arch="aarch64"),
        },
    )
    r = run("audit", str(arm_env.prefix), "--root", str(clean_root))
    line = r.line("G1", "fastkernels")
    assert line.startswith("G1 FAIL: ") and "1 x86_64 shared object(s) in a aarch64 environment" in line
    assert "fastkernels/_ops.so" in line
    assert r.code == 1


def test_matching_architecture_passes(arm_env, elves, run, clean_root):
    arm_env.add(
        "fastkernels", "1.0", files={"fastkernels/_ok.so": elves.linked(("libcudart.so.13",), "aarch64")}
    )
    r = run("audit", str(arm_env.prefix), "--root", str(clean_root))
    assert r.line("G1", "fastkernels").startswith("G1 PASS")
    assert "environment aarch64" in r.line("G1", "distributions")


def test_markers_are_evaluated_for_the_target_not_the_host(arm_env, elves, run, clean_root):
    arm_env.add("tool", "1.0", requires=['nvidia-cuda-runtime-cu12==12.8.90; platform_machine == "x86_64"'])
    r = run("audit", str(arm_env.prefix), "--root", str(clean_root))
    assert not [ln for ln in r.lines if "tool 1.0" in ln]  # the requirement does not apply on aarch64
    r = run("audit", str(arm_env.prefix), "--root", str(clean_root), "--machine", "x86_64")
    assert r.line("G1", "tool 1.0").startswith(
        "G1 FAIL: tool 1.0 needs CUDA 12: requires nvidia-cuda-runtime"
    )


def test_bitsandbytes_passes_only_with_a_cuda13_library(tmp_path, elves, run, clean_root):
    from conftest import make_env

    old = make_env(tmp_path / "old", elves)
    old.add(
        "bitsandbytes",
        "0.45.5",
        files={
            "bitsandbytes/libbitsandbytes_cuda121.so": elves.linked(("libcudart.so.12",)),
            "bitsandbytes/libbitsandbytes_cuda128.so": elves.linked(("libcudart.so.12", "libcublas.so.12")),
        },
    )
    r = run("audit", str(old.prefix), "--root", str(clean_root))
    line = r.line("G1", "bitsandbytes")
    assert line.startswith("G1 FAIL: ") and "no CUDA 13 library" in line and ">= 0.48" in line
    new = make_env(tmp_path / "new", elves)
    new.add(
        "bitsandbytes",
        "0.49.2",
        files={
            "bitsandbytes/libbitsandbytes_cuda128.so": elves.linked(("libcudart.so.12",)),
            "bitsandbytes/libbitsandbytes_cuda130.so": elves.linked(("libcudart.so.13",)),
        },
    )
    r = run("audit", str(new.prefix), "--root", str(clean_root))
    assert r.line("G1", "bitsandbytes").startswith("G1 PASS: bitsandbytes 0.49.2 carries a CUDA 13 library")


def test_vendored_hashed_soname_counts(env, elves, run, clean_root):
    vendored = elves.stub("libcudart.faf08d9a.so.12")
    env.add(
        "wheelwithvendor",
        "0.3",
        files={
            "wheelwithvendor.libs/libcudart.faf08d9a.so.12": vendored,
            "wheelwithvendor/_k.so": elves.linked(("libcudart.faf08d9a.so.12",)),
        },
    )
    r = run("audit", str(env.prefix), "--root", str(clean_root))
    line = r.line("G1", "wheelwithvendor")
    assert line.startswith("G1 FAIL") and "links libcudart.faf08d9a.so.12" in line


def test_cuda12_named_consumer_fails_with_its_cuda13_name(env, run, clean_root):
    env.add("cupy-cuda12x", "13.6.0")
    r = run("audit", str(env.prefix), "--root", str(clean_root))
    line = r.line("G1", "cupy-cuda12x")
    assert line.startswith("G1 FAIL") and "cupy-cuda13x" in line


def test_broken_and_unreadable_parts_are_reported_and_the_audit_goes_on(env, elves, run, clean_root):
    cuda13_torch(env, elves)
    (env.site / "ghost-1.0.dist-info").mkdir()  # no METADATA
    (env.site / "noname-1.0.dist-info").mkdir()
    (env.site / "noname-1.0.dist-info" / "METADATA").write_text("Metadata-Version: 2.1\nVersion: 1.0\n\n")
    real = elves.linked(("libcudart.so.13",)).read_bytes()
    env.add("damaged", "1.0", files={"damaged/_cut.so": real[:100], "damaged/_gone.so": b""})
    os.remove(env.site / "damaged" / "_gone.so")
    loop = env.site / "damaged" / "_loop.so"
    os.symlink(loop.name, loop)
    with open(env.site / "damaged-1.0.dist-info" / "RECORD", "a") as fh:
        fh.write("damaged/_loop.so,,\n")
    r = run("audit", str(env.prefix), "--root", str(clean_root))
    assert "Traceback" not in r.err and r.err == ""
    assert r.line("G1", "ghost-1.0.dist-info/METADATA").startswith("G1 ERROR: ")
    assert "has no Name field" in r.line("G1", "noname-1.0.dist-info")
    assert r.line("G1", "_cut.so").startswith("G1 WARN: ") and "truncated" in r.line("G1", "_cut.so")
    assert "listed in RECORD but missing" in r.line("G1", "_gone.so")
    assert r.line("G1", "_loop.so").startswith("G1 WARN: ")
    assert r.line("G1", "torch 2.11.0").startswith("G1 PASS")  # the rest was still checked
    assert r.code == 0 and r.lines[-1].startswith("verdict: ready-with-warnings")


def test_egg_info_distributions_are_read(env, elves, run, clean_root):
    egg = env.site / "legacy-0.1.egg-info"
    egg.mkdir()
    (egg / "PKG-INFO").write_text("Metadata-Version: 1.1\nName: legacy\nVersion: 0.1\n\n")
    (egg / "requires.txt").write_text("numpy\n\n[gpu]\nnvidia-cublas-cu12\n")
    (env.site / "legacy").mkdir()
    (env.site / "legacy" / "_x.so").write_bytes(elves.linked(("libcublas.so.12",)).read_bytes())
    (egg / "installed-files.txt").write_text("../legacy/_x.so\nPKG-INFO\n")
    r = run("audit", str(env.prefix), "--root", str(clean_root))
    line = r.line("G1", "legacy 0.1")
    assert line.startswith("G1 FAIL") and "links libcublas.so.12" in line
    assert "requires nvidia-cublas-cu12" not in line  # optional extra, not installed by default


def test_summary_counts_what_was_read(env, elves, run, clean_root):
    cuda13_torch(env, elves)
    r = run("audit", str(env.prefix), "--root", str(clean_root), "--json")
    assert r.json()["context"]["distributions"] == 2
    assert r.json()["context"]["shared_objects"] == 2
    assert Path(r.json()["context"]["site_dirs"][0]) == env.site


def test_a_bundled_cuda12_library_nothing_links_is_not_a_binding(env, elves, run, clean_root):
    """triton 3.6 (torch 2.11's own pin) ships libcupti.so.12 as libcupti.so for its profiler."""
    env.add(
        "triton",
        "3.6.0",
        files={
            "triton/backends/nvidia/lib/cupti/libcupti.so": elves.stub("libcupti.so.12"),
            "triton/_C/libtriton.so": elves.linked(("libcuda.so.1",)),
        },
    )
    r = run("audit", str(env.prefix), "--root", str(clean_root))
    line = r.line("G1", "triton 3.6.0")
    assert line.startswith("G1 INFO: triton 3.6.0 bundles libcupti.so.12 (CUDA 12)"), line
    assert r.code == 0
    env.add("profiler-plugin", "1.0", files={"pp/_p.so": elves.linked(("libcupti.so.12",))})
    r = run("audit", str(env.prefix), "--root", str(clean_root))
    assert r.line("G1", "profiler-plugin").startswith("G1 FAIL")  # whoever links it is bound


def test_record_paths_with_commas_are_read_through_csv_quoting(tmp_path):
    from sparkenv.environment.distributions import Distribution

    record = 'pkg/plain.so,sha256=x,1\n"pkg/odd,name.so.12",sha256=y,2\n'
    record += "pkg/readme.txt,,\npkg/_m.cpython-312.so,,\n"
    d = Distribution("pkg", "pkg", "1", tmp_path, tmp_path, (), record)
    assert sorted(d.shared_object_paths()) == ["pkg/_m.cpython-312.so", "pkg/odd,name.so.12", "pkg/plain.so"]
    assert d.path_containing("readme") == "pkg/readme.txt"
    assert Distribution("p", "p", "1", tmp_path, tmp_path, (), None).shared_object_paths() == []

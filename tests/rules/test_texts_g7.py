"""rules/g7.py (G7): the words each verdict gives, since they are what the user acts on — which objects
hold the code, what runs on the GPU, what to install or export instead. The tables' rows (test_g7.py)
pin the status; here each text is pinned at the edge where it changes (one object or several, PTX only,
what was not read at lock, Triton's ptxas found or not, the live snapshot's sections present or not).
Targets are the names nvcc writes into fatbins (tests/kernel_helpers.BUILDS); the installed and resolved
census rows read real fatbins."""

from __future__ import annotations

import stage_facts as sf

from sparkenv.core.report import Status
from sparkenv.cuda import coverage, toolchain
from sparkenv.rules import g7

GB10, H200 = (12, 1), (9, 0)
GPU = "GB10 (12.1)"
REBUILD = (
    "install a build of pkg with kernels for 12.1 (sm_121, or sm_120/sm_120f which run on the whole 12.x "
    "family; not an 'a' build for another capability), e.g. the CUDA 13 wheel or the NGC image's build; or "
    'rebuild it with TORCH_CUDA_ARCH_LIST="12.1"'
)
PTX_FIX = (
    "prefer a build of pkg with sm_121 (or sm_120) cubins, or run it once while building the image so the "
    "JIT cache ships warm"
)
TORCH_13 = "use a CUDA 13 torch (cu130 index or NGC) built with sm_120"
NVFP4 = ["python", "serve.py", "--quantization", "nvfp4"]


def obj(path: str, *targets: str, **kw) -> coverage.ObjectKernels:
    return coverage.ObjectKernels(path, targets, **kw)


# --- package_finding: one finding per package, on the union of its objects --------------------------


def test_pass_counts_the_objects_and_names_the_code_that_runs():
    one = g7.package_finding("pkg", "1.0", [obj("pkg/a.so", "sm_120")], GB10, GPU)
    assert (one.status, one.summary) == (
        Status.PASS,
        "pkg 1.0: 1 object with kernels; runs on GB10 (12.1) (sm_120 runs on 12.1)",
    )
    assert one.evidence == ("pkg/a.so: sm_120",) and one.fix is None
    two = g7.package_finding("pkg", "1.0", [obj("pkg/b.so", "sm_90"), obj("pkg/a.so", "sm_120")], GB10, GPU)
    assert two.summary.startswith("pkg 1.0: 2 objects with kernels; runs on GB10 (12.1)")
    assert two.evidence == ("pkg/a.so: sm_120", "pkg/b.so: sm_90")  # sorted by path


def test_fail_names_three_objects_then_counts_the_rest():
    objs = [obj(f"pkg/_{i}.so", "sm_90") for i in range(5)]
    f = g7.package_finding("pkg", "1.0", objs, GB10, GPU)
    assert f.status is Status.FAIL and f.subject == "pkg"
    assert f.summary == (
        "pkg 1.0 (pkg/_0.so, pkg/_1.so, pkg/_2.so and 2 more) cannot run on GB10 (12.1): no code that runs "
        "on 12.1 (has sm_90) — fails with 'no kernel image is available for execution on the device'"
    )
    assert f.fix == REBUILD
    assert f.evidence == tuple(f"pkg/_{i}.so: sm_90" for i in range(5))
    three = g7.package_finding("pkg", "1.0", objs[:3], GB10, GPU)
    assert "(pkg/_0.so, pkg/_1.so, pkg/_2.so) cannot run" in three.summary


def test_ptx_only_of_unknown_size_is_a_warn_with_its_fix():
    f = g7.package_finding("pkg", "2.0", [obj("pkg/_k.so", "compute_90")], GB10, GPU)
    assert f.status is Status.WARN
    assert f.summary.startswith(
        "pkg 2.0 (pkg/_k.so): only PTX fits 12.1 (compute_90): the driver JIT-compiles"
    )
    assert f.fix == PTX_FIX


def test_ptx_payload_is_summed_over_the_objects_when_every_size_is_known():
    """Two objects of 200 KiB PTX each: 400 KiB together is past the 256 KiB warning size; one object's
    size unknown: the cost is assumed (WARN, no size said)."""
    each = {"compute_90": 200 << 10}
    sized = [obj("pkg/a.so", "compute_90", payload=each), obj("pkg/b.so", "compute_90", payload=each)]
    assert g7.package_finding("pkg", "1", sized[:1], GB10, GPU).status is Status.INFO
    both = g7.package_finding("pkg", "1", sized, GB10, GPU)
    assert both.status is Status.WARN and "KiB" not in both.summary
    unsized = [sized[0], obj("pkg/b.so", "compute_90")]
    assert g7.package_finding("pkg", "1", unsized, GB10, GPU).status is Status.WARN
    small = g7.package_finding(
        "pkg", "1", [obj("pkg/a.so", "compute_90", payload={"compute_90": 4096})], GB10, GPU
    )
    assert small.summary == (
        "pkg 1 (pkg/a.so): only PTX fits 12.1 (compute_90, 4 KiB): JIT-compiled at first use, small enough "
        "to take well under a second"
    )
    assert small.fix is None


def test_unread_object_is_an_info_naming_its_problem_and_sections():
    damaged = obj(
        "pkg/b.so",
        "sm_90",
        complete=False,
        problem="fatbin entry past the end of the section",
        sections=(".nv_fatbin", ".rodata"),
    )
    f = g7.package_finding("pkg", "1.0", [damaged], GB10, GPU)
    assert f.status is Status.INFO and f.fix is None
    assert f.summary == (
        "pkg 1.0 (pkg/b.so): no code for 12.1 among what could be read (has sm_90); incomplete — pkg/b.so: "
        "fatbin entry past the end of the section"
    )
    assert f.evidence == (
        "pkg/b.so: sm_90 [in .nv_fatbin, .rodata] (fatbin entry past the end of the section)",
    )
    nothing = g7.package_finding("pkg", "1.0", [obj("pkg/c.so", complete=False)], GB10, GPU)
    assert nothing.evidence == ("pkg/c.so: nothing read",)
    assert nothing.summary == "pkg 1.0 (pkg/c.so): no CUDA kernels read"


# --- Triton's ptxas ------------------------------------------------------------------------------------


def tools(bundled, env=None, releases=None, version="3.6.0"):
    return toolchain.TritonTools("triton", version, bundled, env or {}, releases or {})


def test_ptxas_that_rejects_sm_121a_says_the_error_and_the_export():
    t = tools({"ptxas": "12.8", "ptxas-blackwell": "12.8"})
    f = g7.judge_triton_ptxas(t, GB10, live=True)
    assert f.status is Status.FAIL and f.subject == "triton-ptxas"
    assert f.summary == (
        "triton 3.6.0 compiles with its bundled ptxas-blackwell (CUDA 12.8), which rejects sm_121a "
        "(needs CUDA >= 12.9): torch.compile and every Triton kernel fail with \"Value 'sm_121a' is not "
        "defined for option "
        "'gpu-name'\""
    )
    assert (
        f.fix == "export TRITON_PTXAS_BLACKWELL_PATH=/usr/local/cuda/bin/ptxas (a CUDA 13 ptxas; NGC images "
        "ship one)"
    )
    assert f.evidence == ("ptxas: CUDA 12.8", "ptxas-blackwell: CUDA 12.8")
    assert g7.judge_triton_ptxas(t, GB10, live=False).status is Status.WARN


def test_triton_without_the_blackwell_tool_uses_ptxas_and_its_variable():
    """Triton before 3.5 ships only ptxas: TRITON_PTXAS_PATH is the variable for 12.x too."""
    t = tools(
        {"ptxas": "12.8"}, {"TRITON_PTXAS_BLACKWELL_PATH": "/opt/ptxas"}, {"/opt/ptxas": "13.0"}, "3.4.0"
    )
    f = g7.judge_triton_ptxas(t, GB10, live=True)
    assert f.status is Status.FAIL
    assert "with its bundled ptxas (CUDA 12.8)" in f.summary
    assert f.summary.endswith(
        "; TRITON_PTXAS_BLACKWELL_PATH is set but Triton uses TRITON_PTXAS_PATH for capability 12.1"
    )
    assert f.fix.startswith("export TRITON_PTXAS_PATH=/usr/local/cuda/bin/ptxas")
    assert f.evidence == ("ptxas: CUDA 12.8", "TRITON_PTXAS_BLACKWELL_PATH=/opt/ptxas")


def test_hopper_uses_ptxas_even_where_the_blackwell_tool_ships():
    t = tools({"ptxas": "12.8", "ptxas-blackwell": "13.0"})
    f = g7.judge_triton_ptxas(t, H200, live=True)
    assert f.status is Status.PASS
    assert f.summary == (
        "triton 3.6.0 compiles with its bundled ptxas (CUDA 12.8), which accepts sm_90a (needs CUDA >= 11.8)"
    )


def test_variable_pointing_at_a_ptxas_release_equal_to_the_minimum_passes():
    t = tools({"ptxas-blackwell": "12.8"}, {"TRITON_PTXAS_BLACKWELL_PATH": "/c/ptxas"}, {"/c/ptxas": "12.9"})
    f = g7.judge_triton_ptxas(t, GB10, live=True)
    assert f.status is Status.PASS
    assert f.summary.startswith("triton 3.6.0 compiles with TRITON_PTXAS_BLACKWELL_PATH=/c/ptxas (CUDA 12.9)")


def test_variable_pointing_at_no_readable_ptxas():
    t = tools({"ptxas-blackwell": "13.0"}, {"TRITON_PTXAS_BLACKWELL_PATH": "/gone"}, {"/gone": None})
    f = g7.judge_triton_ptxas(t, GB10, live=False)
    assert f.status is Status.WARN
    assert f.summary == (
        "triton 3.6.0: TRITON_PTXAS_BLACKWELL_PATH=/gone is not a readable ptxas: Triton cannot compile "
        "kernels for sm_121a"
    )
    assert f.evidence == ("TRITON_PTXAS_BLACKWELL_PATH=/gone",)
    assert (
        f.fix
        == "point TRITON_PTXAS_BLACKWELL_PATH at a CUDA 13 ptxas (/usr/local/cuda/bin/ptxas) or unset it"
    )
    assert g7.judge_triton_ptxas(t, GB10, live=True).status is Status.FAIL


def test_no_bundled_ptxas_and_no_variable_is_an_info():
    f = g7.judge_triton_ptxas(tools({}), GB10, live=True)
    assert (f.status, f.summary, f.fix) == (Status.INFO, "triton 3.6.0: no bundled ptxas found", None)


def test_bundled_release_not_read_or_no_known_minimum_is_an_info():
    f = g7.judge_triton_ptxas(tools({"ptxas-blackwell": None}), GB10, live=True)
    assert f.status is Status.INFO
    assert f.summary == (
        "triton 3.6.0 compiles with its bundled ptxas-blackwell (CUDA release not read); no known "
        "minimum for sm_121a"
    )
    assert f.evidence == ("ptxas-blackwell: CUDA ?",)
    old_gpu = g7.judge_triton_ptxas(tools({"ptxas": "12.8"}), (7, 0), live=True)
    assert old_gpu.status is Status.INFO and "(CUDA 12.8); no known minimum for sm_70a" in old_gpu.summary


# --- TORCH_CUDA_ARCH_LIST -------------------------------------------------------------------------------


def test_arch_list_texts():
    bad = g7.judge_arch_list("9.0a", GB10, "the image")
    assert bad.status is Status.FAIL and bad.evidence == ("9.0a",)
    assert bad.summary.startswith(
        'TORCH_CUDA_ARCH_LIST="9.0a" (the image): extensions compiled under it '
        "cannot run on GB10 (12.1) (no code that runs on 12.1"
    )
    assert bad.fix == 'set TORCH_CUDA_ARCH_LIST="12.1" (or add it) before anything is compiled'
    jit = g7.judge_arch_list("9.0+PTX", GB10, "the image")
    assert jit.status is Status.WARN and "run on GB10 (12.1) only after a JIT (only PTX fits" in jit.summary
    assert jit.fix == bad.fix
    junk = g7.judge_arch_list("sm_90", GB10, "the image")
    assert junk.summary == (
        'TORCH_CUDA_ARCH_LIST="sm_90" (the image) is not a list of capabilities like "12.0 12.1+PTX"'
    )
    assert junk.fix == 'set TORCH_CUDA_ARCH_LIST="12.1"' and junk.evidence == ("sm_90",)
    assert g7.judge_arch_list("", GB10, "the image").status is Status.WARN
    good = g7.judge_arch_list("12.1", GB10, "the image")
    assert (
        good.summary == 'TORCH_CUDA_ARCH_LIST="12.1" (the image) builds extensions that run on GB10 (12.1) '
        "(sm_121 runs on 12.1)"
    )
    assert good.fix is None and good.evidence == ()


# --- Stage.INSTALLED and Stage.RESOLVED: the census line ------------------------------------------------


def _census(found):
    return next(f for f in found if f.subject == "kernels")


def test_installed_census_counts_objects_and_packages(ctx):
    env = ctx.env()
    env.add(
        "mylib", "1.0", files={"mylib/_a.so": ctx.kernels.so("sm120"), "mylib/_b.so": ctx.kernels.so("sm90")}
    )
    env.add("other", "2.0", files={"other/_k.so": ctx.kernels.so("sm90")})
    # cuFFT's layout: an sm_75 helper in .nv_fatbin, the kernels for every GPU in a data section
    k = ctx.kernels
    env.add(
        "cufft-like",
        "1.0",
        files={"c/libc.so": k.with_section(k.so("sm75"), ".ldata", k.fatbin("fat"), "c", 4)},
    )
    found = g7.installed(sf.installed(ctx, gpu=coverage.gb10()))
    census = _census(found)
    assert census.summary == (
        "read the GPU code of 4 shared objects in 3 distributions (fatbin headers; 1 with fatbins in data "
        "sections); target GB10 (12.1)"
    )
    assert census.evidence == (f"rules: {coverage.kernels_source()}",)
    by = {f.subject: f.status for f in found}
    assert by["mylib"] is Status.PASS and by["other"] is Status.FAIL and by["cufft-like"] is Status.PASS


def test_installed_census_of_one_object(ctx):
    ctx.env().add("mylib", "1.0", files={"mylib/_k.so": ctx.kernels.so("sm120")})
    census = _census(g7.installed(sf.installed(ctx, gpu=coverage.gb10())))
    assert census.summary == (
        "read the GPU code of 1 shared object in 1 distribution (fatbin headers); target GB10 (12.1)"
    )


def _wheel(ctx, builds: dict[str, str], unread: str = "", via: bool = False):
    from sparkenv.cuda import elf
    from sparkenv.environment import kernels
    from sparkenv.facts.resolved import WheelElves

    objects, found = [], []
    for member, build in builds.items():
        data = ctx.kernels.so(build).read_bytes()
        objects.append((member, elf.parse_bytes(data)))
        got = kernels.read_bytes(data, member, coverage.gb10())
        if got:
            found.append(got)
    pkgs = [sf.locked("mylib", "1.0")]
    if via:
        pkgs.append(sf.locked("app", "1.0", ("mylib",)))
    return sf.resolved(
        *pkgs,
        roots=("app",) if via else None,
        wheel_elves={"mylib": WheelElves(tuple(objects), unread, tuple(found))},
    )


def test_resolved_pass_says_where_it_was_read_and_the_chain(ctx):
    found = g7.resolved(_wheel(ctx, {"mylib/_a.so": "sm120", "mylib/_b.so": "sm90"}, via=True))
    f = next(f for f in found if f.subject == "mylib")
    assert f.status is Status.PASS
    assert f.summary == (
        "mylib 1.0: 2 objects with kernels; runs on GB10 (12.1) (sm_120 runs on 12.1) (read from its "
        "wheel, via app → mylib)"
    )
    assert _census(found).summary == (
        "read the GPU code of 2 shared objects in 1 wheel (fatbin headers); target GB10 (12.1)"
    )


def test_resolved_wheel_partly_read_with_nothing_that_runs_is_an_info(ctx):
    unread = "mylib/_big.so (80 MiB) past the read budget"
    found = g7.resolved(_wheel(ctx, {"mylib/_k.so": "sm90"}, unread=unread, via=True))
    f = next(f for f in found if f.subject == "mylib")
    assert f.status is Status.INFO and f.fix is None
    assert f.summary == (
        f"mylib 1.0 (via app → mylib): its GPU code was not all read at lock ({unread}); what was read: "
        "mylib 1.0 (mylib/_k.so): no code for 12.1 among what could be read (has sm_90); incomplete; "
        "`sparkenv audit` reads it after install"
    )
    assert f.evidence == ("mylib/_k.so: sm_90",)


def test_resolved_wheel_partly_read_with_code_that_runs_passes(ctx):
    found = g7.resolved(_wheel(ctx, {"mylib/_k.so": "sm120"}, unread="mylib/_big.so past the read budget"))
    f = next(f for f in found if f.subject == "mylib")
    assert f.status is Status.PASS and f.summary.endswith("(read from its wheel)")


def test_resolved_wheel_with_no_gpu_code_read_is_named_in_the_census(ctx):
    from sparkenv.facts.resolved import WheelElves

    unread = "mylib/_big.so (80 MiB) past the read budget"
    facts = sf.resolved(
        sf.locked("mylib", "1.0"),
        sf.locked("extra", "2.0"),
        wheel_elves={"mylib": WheelElves((), unread, ()), "notlocked": WheelElves((), unread, ())},
    )
    found = g7.resolved(facts)
    assert [f.subject for f in found] == ["kernels"]
    census = found[0]
    assert census.status is Status.INFO
    assert census.summary == (
        "no resolved wheel carries CUDA kernels; target GB10 (12.1); not read at lock (past the read "
        "budget): mylib 1.0 — `sparkenv audit` reads their GPU code after install"
    )
    assert census.evidence == (f"rules: {coverage.kernels_source()}", f"mylib 1.0: {unread}")


def test_resolved_without_wheels_read_says_nothing():
    assert g7.resolved(sf.resolved(sf.locked("mylib", "1.0"))) == []


# --- Stage.LIVE --------------------------------------------------------------------------------------------


def _live(**edits):
    return g7.live(sf.live_raw("gb10", **edits))


def _about(found, subject):
    mine = [f for f in found if f.subject == subject]
    assert len(mine) == 1, found
    return mine[0]


def test_live_torch_arch_list_texts():
    ok = _about(_live(), "capability")
    assert ok.summary == (
        "capability (12, 1): GB10; torch arch list sm_80, sm_86, sm_90, sm_100, sm_110, sm_120, compute_120 "
        "runs on SM121 (sm_120/compute_120)"
    )
    unread = _about(_live(torch__stages__first_op__arch_list=None), "capability")
    assert (unread.status, unread.summary) == (
        Status.PASS,
        "capability (12, 1): a GB10 (torch arch list not read)",
    )
    ptx = _about(_live(torch__stages__first_op__arch_list=["sm_90", "compute_90"]), "capability")
    assert ptx.status is Status.WARN and ptx.fix == TORCH_13 and ptx.evidence == ("sm_90", "compute_90")
    assert ptx.summary.startswith(
        "capability (12, 1): GB10; torch arch list sm_90, compute_90: only PTX fits 12.1"
    )
    bad = _about(_live(torch__stages__first_op__arch_list=["sm_90"]), "capability")
    assert bad.summary == (
        "capability (12, 1): GB10, but torch was built for sm_90: no sm_120/compute_120 code to run on SM121"
    )
    assert bad.evidence == ("sm_90",)


def test_live_not_a_gb10_still_judges_the_arch_list_of_its_environment():
    found = g7.live(sf.live_raw("h200-live", env={"TORCH_CUDA_ARCH_LIST": "12.1"}))
    skip = _about(found, "capability")
    assert skip.status is Status.SKIP and skip.summary == "capability (9, 0) is not a GB10 (12, 1)"
    arch = _about(found, "TORCH_CUDA_ARCH_LIST")
    assert arch.status is Status.FAIL and "(the gate's environment)" in arch.summary
    assert found[0] is skip


def test_live_without_a_capability_is_a_skip():
    f = g7.live(sf.live_raw("gb10", torch__stages__first_op=None, smi=None))
    assert [(x.status, x.subject, x.summary) for x in f] == [
        (Status.SKIP, "capability", "no GPU capability known (no GPU, or torch/nvidia-smi missing)")
    ]


def test_live_kernel_coverage_judges_each_package_and_triton():
    coverage_facts = {
        "packages": {
            "mylib": {"version": "1.0", "objects": [{"path": "mylib/_k.so", "targets": ["sm_90"]}]},
            "empty": {"version": "2.0", "objects": []},
            "broken": "not a dict",
        },
        "triton": {"name": "triton", "version": "3.6.0", "bundled": {"ptxas-blackwell": "12.8"}},
    }
    found = _live(kernel_coverage=coverage_facts)
    lib = _about(found, "mylib")
    assert lib.status is Status.FAIL and lib.summary.startswith("mylib 1.0 (mylib/_k.so) cannot run on GB10")
    assert lib.fix.startswith("install a build of mylib with kernels for 12.1")
    assert _about(found, "triton-ptxas").status is Status.FAIL  # live: the workload's environment
    assert not [f for f in found if f.subject in ("empty", "broken", "kernels")]
    no_version = _live(
        kernel_coverage={"packages": {"x": {"objects": [{"path": "x.so", "targets": ["sm_90"]}]}}}
    )
    assert _about(no_version, "x").summary.startswith("x ? (x.so)")


def test_live_default_mode_leaves_the_kernels_to_deep():
    f = _about(_live(kernel_coverage={"packages": None}), "kernels")
    assert f.status is Status.INFO
    assert f.summary == (
        "the kernels of every package are not read in the default mode: `--deep` reads them here; "
        "`sparkenv audit` and `sparkenv build` judge them with the same rule"
    )


def test_live_kernel_coverage_probe_error_is_an_error_line():
    f = _about(_live(probe_errors={"kernel_coverage": "timed out after 30 s"}), "kernels")
    assert (f.status, f.summary) == (Status.ERROR, "kernel_coverage probe failed: timed out after 30 s")
    assert not [x for x in _live() if x.subject == "kernels"]


def test_nvfp4_without_a_kernel_package_says_why_it_was_not_read():
    probe_failed = _about(_live(workload=NVFP4, probe_errors={"kernels": "probe crashed"}), "nvfp4")
    assert probe_failed.summary == (
        "NVFP4 is intended (workload argument nvfp4): on SM121 it runs ~32% slower than FP8 unless the "
        "kernels target sm_121a, and no installed NVFP4 kernel package was found to read (probe crashed)"
    )
    assert probe_failed.fix == (
        "stay on FP8 unless your kernels are built for sm_121a (cuobjdump --list-elf on the kernel library "
        "shows sm_121a)"
    )
    assert probe_failed.evidence == ("workload argument nvfp4",)
    absent = _about(_live(workload=NVFP4), "nvfp4")
    assert absent.summary.endswith("(kernels not in this snapshot)")
    empty = _about(_live(workload=NVFP4, kernels={}), "nvfp4")
    assert empty.summary.endswith("(none of gate.toml's nvfp4.kernel_packages)")


def test_nvfp4_kernels_without_sm_121a():
    f = _about(
        _live(
            workload=NVFP4,
            kernels={
                "vllm": {"version": "0.13.0", "targets": ["sm_90", "sm_120"]},
                "torchao": {"version": "0.14", "targets": []},
            },
        ),
        "nvfp4",
    )
    assert f.status is Status.WARN and f.fix == "stay on FP8, or use kernels built for sm_121a"
    assert f.summary == (
        "NVFP4 is intended (workload argument nvfp4) but no kernel targets sm_121a (vllm 0.13.0: sm_90, "
        "sm_120): NVFP4 runs ~32% slower than FP8 on SM121 without it"
    )
    assert f.evidence == ("vllm 0.13.0: sm_90, sm_120",)
    none = _about(
        _live(
            workload=NVFP4,
            kernels={"vllm": {"version": "0.13.0", "targets": []}, "sgl-kernel": {"targets": []}},
        ),
        "nvfp4",
    )
    assert "(no CUDA kernels found in sgl-kernel, vllm)" in none.summary
    ok = _about(
        _live(
            workload=NVFP4,
            kernels={
                "b": {"version": "1", "targets": ["compute_121a"]},
                "a": {"version": "2", "targets": ["sm_121a"]},
            },
        ),
        "nvfp4",
    )
    assert ok.summary == "NVFP4 is intended (workload argument nvfp4) and a, b kernels target sm_121a"
    assert ok.evidence == ("a 2: sm_121a", "b 1: compute_121a")


def test_no_nvfp4_intent_says_nothing():
    assert not [
        f for f in _live(kernels={"vllm": {"version": "1", "targets": ["sm_90"]}}) if f.subject == "nvfp4"
    ]


# --- rules/g7_coverage.py: the one verdict table -----------------------------------------------------------


def test_coverage_fields_and_reasons():
    from sparkenv.rules import g7_coverage

    every = g7_coverage.judge(["sm_120", "compute_120", "lto_120", "sm_90", "nonsense"], GB10)
    assert (every.status, every.native, every.jit, every.lto) == (
        Status.PASS,
        ("sm_120",),
        ("compute_120",),
        ("lto_120",),
    )
    assert sorted(every.targets) == ["compute_120", "lto_120", "sm_120", "sm_90"]  # what parses, once
    lto = g7_coverage.judge(["lto_120", "sm_90"], GB10)
    assert (lto.status, lto.lto, lto.jit, lto.native) == (Status.WARN, ("lto_120",), (), ())
    assert lto.reason == (
        "only LTO-IR fits 12.1 (lto_120): LTO-IR is linked into GPU code at run time by nvJitLink, only "
        "where the library itself does so (cuFFT callbacks, for one)"
    )
    ptx_first = g7_coverage.judge(["compute_120", "lto_120"], GB10)
    assert ptx_first.status is Status.WARN and ptx_first.reason.startswith(
        "only PTX fits 12.1 (compute_120): "
    )
    none = g7_coverage.judge(["sm_120a", "sm_122", "sm_90"], GB10)
    assert none.status is Status.FAIL and none.targets
    assert none.reason == (
        "no code that runs on 12.1 (has sm_90, sm_120a, sm_122; sm_120a is arch-specific: it runs only on "
        "exactly that capability; sm_122 needs a newer GPU of this family)"
    )
    assert g7_coverage.judge(["sm_90a"], GB10).reason == "no code that runs on 12.1 (has sm_90a)"
    empty = g7_coverage.judge(["nonsense"], GB10, complete=False)
    assert (empty.status, empty.targets, empty.reason) == (Status.INFO, (), "no CUDA kernels read")


def test_ptx_size_counts_only_what_fits_and_warns_at_the_line():
    from sparkenv.knowledge import kernels
    from sparkenv.rules import g7_coverage

    line = kernels().cost.ptx_warn_bytes
    both = ["compute_90", "compute_120", "sm_80"]
    small = g7_coverage.judge(
        both, GB10, payload={"compute_90": line // 2, "compute_120": line // 2 - 1, "sm_80": 50 << 20}
    )
    assert small.status is Status.INFO and f"{(line - 1) / 1024:.0f} KiB" in small.reason
    at = g7_coverage.judge(both, GB10, payload={"compute_90": line // 2, "compute_120": line // 2})
    assert at.status is Status.WARN
    unnamed = g7_coverage.judge(["compute_90"], GB10, payload={})
    assert unnamed.status is Status.INFO and "(compute_90, 0 KiB)" in unnamed.reason


def test_coverage_names_every_target_it_counts_and_leaves_no_field_unset():
    """Each reason lists all the targets it is about, comma-separated, and every verdict's target tuples
    are tuples (a caller joins and iterates them), also where nothing was read or the read was cut short."""
    from sparkenv.knowledge import kernels
    from sparkenv.rules import g7_coverage

    cost = kernels().cost
    two_lto = g7_coverage.judge(["lto_90", "lto_120"], GB10)
    assert two_lto.reason == f"only LTO-IR fits 12.1 (lto_90, lto_120): {cost.lto}"
    small = g7_coverage.judge(
        ["compute_90", "compute_120"], GB10, payload={"compute_90": 1024, "compute_120": 2048}
    )
    assert small.reason == (
        "only PTX fits 12.1 (compute_90, compute_120, 3 KiB): JIT-compiled at first use, small enough to "
        "take well under a second"
    )
    # sm_122a: arch-specific to a capability of the GPU's family that is not the GPU's own (12.2 != 12.1)
    two_a = g7_coverage.judge(["sm_120a", "sm_122a"], GB10)
    assert two_a.reason == (
        "no code that runs on 12.1 (has sm_120a, sm_122a; sm_120a, sm_122a is arch-specific: it runs only "
        "on exactly that capability; sm_122a needs a newer GPU of this family)"
    )
    cut_short = g7_coverage.judge(["sm_90"], GB10, complete=False)
    assert cut_short == g7_coverage.Coverage(
        Status.INFO,
        (),
        (),
        (),
        ("sm_90",),
        "no code for 12.1 among what could be read (has sm_90); incomplete",
    )
    nothing = g7_coverage.judge([], GB10)
    assert nothing == g7_coverage.Coverage(Status.INFO, (), (), (), (), "no CUDA kernels read")

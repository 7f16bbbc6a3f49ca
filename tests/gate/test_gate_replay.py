"""The ten checks on replayed machines: a real H200 recorded live, H200 and GB10 command outputs."""

from __future__ import annotations

import json
from pathlib import Path

import gate_helpers as gh
import pytest

from sparkenv.core.report import LINE_RE


def gate(run, tmp_path: Path, facts: dict, *args: str, name: str = "facts.json"):
    """A replay, in-process through the gate's own entry (as a subprocess these took 15 s together);
    the tests below that call `run` directly keep the process contract: exit codes, one-line errors."""
    return gh.gate_inprocess(["--facts", gh.write(tmp_path, facts, name), *args])


def test_h200_recorded_live(run, tmp_path):
    r = gate(run, tmp_path, gh.live())
    assert r.code == 0, r.out
    assert r.line("G1", "torch").startswith(
        "G1 PASS: torch 2.11.0+cu130 built for CUDA 13.0; first CUDA operation"
    )
    assert r.line("G7", "capability") == "G7 SKIP: capability (9, 0) is not a GB10 (12, 1)"
    assert r.line("G3", "MemAvailable").startswith("G3 INFO: MemAvailable 125.4 GiB of 125.9 GiB")
    assert "platform: generic-nvidia" in r.lines
    findings = [ln for ln in r.lines if ln.startswith("G")]
    assert [ln.split()[0] for ln in findings][:1] == ["G1"] and all(LINE_RE.match(ln) for ln in findings)
    assert {ln.split()[0] for ln in findings} == {f"G{n}" for n in range(1, 11)}  # all ten answer


def test_h200_measured_bandwidth_and_sampling(run, tmp_path):
    data = gate(run, tmp_path, gh.live("h200-live-bandwidth"), "--json").json()
    g5 = next(f for f in data["findings"] if f["id"] == "G5")
    assert g5["status"] == "INFO" and g5["summary"].startswith(
        "measured 4073.1 GB/s device copy (NVIDIA H200"
    )
    g4 = next(f for f in data["findings"] if f["id"] == "G4")
    assert any("6 samples" in e for e in g4["evidence"])


def test_h200_from_its_nvidia_smi_and_meminfo_output(run, tmp_path):
    r = gate(run, tmp_path, gh.h200_from_outputs())
    assert (
        r.line("G4", "drawn") == "G4 INFO: 39°C, 79.46 W drawn, limit 700 W (one reading; --sample SECONDS "
        "watches for a plateau)"
    )
    assert r.line("G3", "MemAvailable").startswith(
        "G3 INFO: MemAvailable 125.3 GiB of 125.9 GiB; page cache 2.1 GiB"
    )
    assert r.line("G6", "GPU").startswith("G6 PASS")


def test_gb10_from_public_reports(run, tmp_path):
    r = gate(run, tmp_path, gh.gb10_from_reports())
    assert "platform: dgx-spark" in r.lines
    g7 = r.line("G7", "capability")
    assert g7.startswith("G7 PASS: capability (12, 1): GB10; torch arch list") and "sm_120" in g7
    assert r.line("G1", "torch").startswith(
        "G1 PASS: torch 2.9.0a0+145a3a7bda.nv25.10 built for CUDA 13.0 (NGC build: no +cu label, as expected)"
    )
    assert r.line("G4", "drawn").startswith("G4 INFO: 35°C, 11.17 W drawn, limit n/a")
    assert r.line("G5", "GB/s").startswith("G5 INFO: plan with 180–192 GB/s sustained, not the 273 GB/s spec")
    assert r.line("G3", "meminfo").startswith(
        "G3 ERROR: meminfo probe failed"
    )  # not in the reports: never PASS
    assert r.line("G9", "torch") == "G9 PASS: torch 2.9.0a0+145a3a7bda.nv25.10 is the NGC image 25.10 build"
    assert r.code == 0


def test_gb10_memory_not_supported_is_expected_not_an_error(run, tmp_path):
    facts = gh.with_changes(
        gh.gb10_from_reports(),
        probe_errors={},
        meminfo={
            "MemTotal": 125_500_000,
            "MemAvailable": 102_000_000,
            "Cached": 19_000_000,
            "Buffers": 100_000,
        },
    )
    data = gate(run, tmp_path, facts, "--json").json()
    g3 = next(f for f in data["findings"] if f["id"] == "G3")
    assert g3["status"] == "INFO"
    assert any("Not Supported / [N/A]: expected on GB10" in e for e in g3["evidence"])


def test_memory_warnings(run, tmp_path):
    r = gate(run, tmp_path, gh.h200_from_outputs(), "--need-gb", "200")
    assert r.line("G3", "MemAvailable").startswith("G3 WARN: ") and "below the 200 GiB" in r.out
    cached = gh.with_changes(
        gh.h200_from_outputs(),
        meminfo={"MemTotal": 100_000_000, "MemAvailable": 60_000_000, "Cached": 40_000_000, "Buffers": 0},
    )
    line = gate(run, tmp_path, cached).line("G3", "MemAvailable")
    assert line.startswith("G3 WARN") and "drop_caches" in line


def test_power_plateau_while_heat_climbs_and_the_30w_fault(run, tmp_path):
    samples = [
        {"t": i * 0.5, "temperature.gpu": 60 + i, "power.draw": 99.0 + (i % 2), "utilization.gpu": 100}
        for i in range(8)
    ]
    facts = gh.live()
    facts["smi"]["samples"] = samples
    line = gate(run, tmp_path, facts).line("G4", "drawn")
    assert line.startswith("G4 WARN") and "power flat at ~100 W while temperature rose 60→67 °C" in line
    gb10 = gh.gb10_from_reports()
    gb10["smi"]["samples"] = [
        {"t": i * 0.5, "temperature.gpu": 50, "power.draw": 29.5, "utilization.gpu": 98} for i in range(6)
    ]
    line = gate(run, tmp_path, gb10).line("G4", "drawn")
    assert line.startswith("G4 WARN") and "power-controller fault" in line and "RMA" in line


def test_throttle_reasons_are_named(run, tmp_path):
    facts = gh.live()
    facts["smi"]["gpus"][0]["clocks_event_reasons.active"] = "0x0000000000000040"
    assert "throttling now: HW thermal slowdown" in gate(run, tmp_path, facts).line("G4", "drawn")


@pytest.mark.parametrize(
    ("stages_change", "expected"),
    [
        (
            {"imported": {"version": "2.9.1+cpu", "cuda": None}},
            "G1 FAIL: torch 2.9.1+cpu is a CPU-only build",
        ),
        (
            {"imported": {"version": "2.9.1+cu128", "cuda": "12.8"}},
            "G1 FAIL: torch 2.9.1+cu128 is built for CUDA 12.8",
        ),
        (
            {
                "import_error": {
                    "error": "ImportError: libcudart.so.12: cannot open shared object file: No such file "
                    "or directory"
                }
            },
            "G1 FAIL: import torch fails: ImportError: libcudart.so.12",
        ),
        (
            {"first_op_error": {"error": "RuntimeError: CUDA error: no kernel image is available"}},
            "G1 FAIL: torch 2.11.0+cu130 (CUDA 13.0): the first CUDA operation fails",
        ),
    ],
)
def test_g1_failures(run, tmp_path, stages_change, expected):
    facts = gh.live()
    stages = facts["torch"]["stages"]
    if "import_error" in stages_change:
        stages.clear()
    for key, value in stages_change.items():
        stages[key] = {**stages.get(key, {}), **value}
    if "first_op_error" in stages_change:
        stages.pop("first_op")
    r = gate(run, tmp_path, facts)
    assert r.line("G1", "torch").startswith(expected), r.out
    assert r.code == 1


def test_leftover_cuda12_runtime_on_the_loader_path(run, tmp_path):
    facts = gh.with_changes(gh.live(), loader={"libcudart12": ["/usr/local/cuda-12.8/lib64/libcudart.so.12"]})
    line = gate(run, tmp_path, facts).line("G1", "loader path")
    assert line.startswith("G1 WARN: a CUDA 12 runtime is on the loader path: /usr/local/cuda-12.8")


def test_flash_attn_and_unsloth(run, tmp_path):
    facts = gh.live()
    facts["torch"]["stages"]["flash"] = {"importable": True, "works": True, "version": "2.7.4.post1"}
    facts["dists"].update({"flash-attn": "2.7.4.post1+25.11", "unsloth": "2026.7.2"})
    r = gate(run, tmp_path, facts)
    assert r.line("G2", "flash-attn 2.7.4.post1 runs") == "G2 PASS: flash-attn 2.7.4.post1 runs on the GPU"
    assert r.line("G2", "unsloth").startswith("G2 INFO: unsloth 2026.7.2 will use flash-attn")
    facts["env"]["SPARKENV_SDPA"] = "1"
    assert (
        gate(run, tmp_path, facts)
        .line("G2", "unsloth")
        .startswith("G2 FAIL: unsloth 2026.7.2: SDPA is wanted")
    )
    facts["torch"]["stages"]["sdpa_override"] = {"installed": True, "active": True}
    assert (
        gate(run, tmp_path, facts)
        .line("G2", "unsloth")
        .startswith("G2 PASS: unsloth 2026.7.2: the SDPA override")
    )
    facts["torch"]["stages"]["flash"] = {
        "importable": True,
        "works": False,
        "version": "2.8.3",
        "error": "RuntimeError: FlashAttention only supports Ampere GPUs or newer.",
    }
    assert (
        gate(run, tmp_path, facts)
        .line("G2", "flash-attn")
        .startswith("G2 FAIL: flash-attn 2.8.3 imports but")
    )


def test_servers_and_their_caps(run, tmp_path):
    facts = gh.gb10_from_reports()
    facts["processes"]["servers"] = [
        {
            "pid": 11,
            "argv": [
                "/usr/bin/python3",
                "-m",
                "vllm.entrypoints.openai.api_server",
                "--model",
                "m",
                "--gpu-memory-utilization",
                "0.4",
            ],
        },
        {"pid": 12, "argv": ["/usr/local/bin/vllm", "serve", "big", "--gpu-memory-utilization=0.9"]},
        {"pid": 13, "argv": ["ollama", "serve"]},
    ]
    r = gate(run, tmp_path, facts)
    assert r.line("G6", "pid 11").startswith("G6 PASS: vLLM (pid 11) capped at --gpu-memory-utilization 0.4")
    p12 = r.line("G6", "pid 12")
    assert p12.startswith("G6 WARN: vLLM (pid 12) is near capacity") and "vllm#46307" in p12
    assert r.line("G6", "pid 13").startswith("G6 WARN: Ollama server (pid 13) has no memory cap")


@pytest.mark.parametrize(
    ("workload", "env", "configs", "expected"),
    [
        (
            ["torchrun", "--nnodes", "2", "--nproc_per_node", "1", "train.py", "--tp-size", "2"],
            {},
            {},
            "G10 FAIL: training with tensor parallel size 2 across 2 nodes",
        ),
        (
            ["vllm", "serve", "m", "--tensor-parallel-size", "2"],
            {"NNODES": "2"},
            {},
            "G10 WARN: serving with tensor parallel size 2 across 2 nodes",
        ),
        (
            ["accelerate", "launch", "train.py"],
            {},
            {"accelerate": {"path": "a.yaml", "data": {"num_machines": "2", "distributed_type": "FSDP"}}},
            "G10 PASS: 2 nodes without tensor parallelism",
        ),
        (
            ["deepspeed", "--num_nodes", "2", "train.py", "--deepspeed", "ds.json"],
            {"WORLD_SIZE": "2", "LOCAL_WORLD_SIZE": "1"},
            {"deepspeed": {"path": "ds.json", "data": {"tensor_parallel": {"autotp_size": 2}}}},
            "G10 FAIL: training with tensor parallel size 2 across 2 nodes",
        ),
        (["python", "train.py"], {}, {}, "G10 PASS: single node"),
    ],
)
def test_parallelism(run, tmp_path, workload, env, configs, expected):
    facts = gh.with_changes(gh.gb10_from_reports(), workload=workload, configs=configs, env={"+": env})
    assert gate(run, tmp_path, facts).line("G10", "node").startswith(expected)


def test_nvfp4_intent_on_gb10(run, tmp_path):
    facts = gh.with_changes(
        gh.gb10_from_reports(),
        workload=["vllm", "serve", "m", "--quantization", "modelopt_fp4", "--gpu-memory-utilization", "0.5"],
    )
    line = gate(run, tmp_path, facts).line("G7", "NVFP4")
    assert line.startswith("G7 WARN: NVFP4 is intended (workload argument modelopt_fp4)") and "FP8" in line
    facts["torch"]["stages"]["first_op"]["arch_list"] = ["sm_80", "sm_90"]
    assert (
        gate(run, tmp_path, facts)
        .line("G7", "capability")
        .startswith("G7 FAIL: capability (12, 1): GB10, but")
    )


def test_known_playbook_issues_follow_what_is_installed(run, tmp_path):
    facts = gh.with_changes(
        gh.gb10_from_reports(), dists={"+": {"bitsandbytes": "0.49.1", "unsloth": "2026.1.4"}}
    )
    line = gate(run, tmp_path, facts).line("G8", "playbooks#57")
    assert "compress_statistics" in line and "[list of 2026-08-24]" in line
    facts["dists"]["bitsandbytes"] = "0.49.2"
    assert "playbooks#57" not in gate(run, tmp_path, facts).out


def test_ngc_torch_replaced_and_ptxas(run, tmp_path):
    facts = gh.gb10_from_reports()
    facts["torch"]["stages"]["imported"]["version"] = "2.9.1"
    facts["env"].pop("TRITON_PTXAS_PATH")
    r = gate(run, tmp_path, facts)
    assert r.line("G9", "torch").startswith(
        "G9 FAIL: NGC image 25.10 detected but torch 2.9.1 is not NGC's build"
    )
    assert r.line("G9", "TRITON_PTXAS_PATH").startswith(
        "G9 WARN: Triton is installed and TRITON_PTXAS_PATH is unset"
    )


def test_a_crashing_check_is_an_error_line_not_a_traceback(run, tmp_path):
    facts = gh.with_changes(
        gh.live(),
        smi={
            "available": True,
            "gpus": [{"name": "x", "power.draw": "lots", "clocks_event_reasons.active": 7}],
            "samples": [{"t": "soon"}],
        },
    )
    # Replayed, such a snapshot is refused on load (it breaks the schema): one line, exit 2.
    r = gate(run, tmp_path, facts)
    assert r.code == 2 and r.out == "" and "Traceback" not in r.err
    assert r.err.strip().endswith("invalid facts snapshot: smi.gpus[0].power.draw must be number or null")
    # Live facts skip the schema: a check that still crashes on them is an ERROR line, the rest run.
    from sparkenv.gate.run import evaluate
    from sparkenv.render.text import finding_line

    findings, _ = evaluate(facts)
    lines = [finding_line(f) for f in findings]
    assert all(LINE_RE.match(ln) for ln in lines)
    assert any(ln.startswith("G4 ERROR: the check g4.live crashed: TypeError") for ln in lines), lines
    assert any(ln.startswith("G1 PASS") for ln in lines)


def test_bad_facts_files(run, tmp_path):
    bad = tmp_path / "bad.json"
    bad.write_text("{not json")
    r = run("gate", "--facts", str(bad))
    assert r.code == 2 and f"{bad}: not JSON" in r.err
    other = tmp_path / "other.json"
    other.write_text(json.dumps({"schema": "something-else"}))
    r = run("gate", "--facts", str(other))
    assert r.code == 2 and "not a sparkenv facts snapshot" in r.err
    r = run("gate", "--policy", "sometimes")
    assert r.code == 2 and "is not one of strict, warn, off" in r.err


def test_unsloth_dispatch_and_the_switch(run, tmp_path):
    facts = gh.live()
    facts["torch"]["stages"]["flash"] = {"importable": True, "works": True, "version": "2.7.4.post1"}
    facts["dists"].update({"flash-attn": "2.7.4.post1+25.11", "unsloth": "2026.7.2"})
    stages = facts["torch"]["stages"]
    # as recorded on the H200 with --import-unsloth-like data: the one-flag patch leaves the dispatch on flash
    stages["sdpa_override"] = {
        "installed": True,
        "active": False,
        "dispatch": "flash_dense",
        "leaks": ["unsloth.utils.attention_dispatch.HAS_FLASH_ATTENTION"],
    }
    line = gate(run, tmp_path, facts).line("G2", "unsloth")
    assert line.startswith(
        "G2 FAIL: unsloth 2026.7.2: SDPA is wanted but the override is not active: "
        "Unsloth's dispatch picks flash_dense"
    )
    facts["env"]["SPARKENV_SDPA"] = "0"  # switched off on purpose: not wanted, not a failure
    line = gate(run, tmp_path, facts).line("G2", "unsloth")
    assert (
        line.startswith("G2 INFO: unsloth 2026.7.2 will use flash-attn")
        and "switches the override off" in line
    )
    facts["env"].pop("SPARKENV_SDPA")
    stages["sdpa_override"] = {"installed": True, "active": True, "dispatch": "sdpa", "installed_by": "pth"}
    line = gate(run, tmp_path, facts).line("G2", "unsloth")
    assert line == "G2 PASS: unsloth 2026.7.2: the SDPA override is active; Unsloth's dispatch picks sdpa"


@pytest.mark.parametrize(
    ("snapshot", "expected"),
    [
        (
            "h200-unsloth-sdpa-on",
            "G2 PASS: unsloth 2026.7.2: the SDPA override is active; Unsloth's dispatch picks sdpa",
        ),
        (
            "h200-unsloth-sdpa-off",
            "G2 FAIL: unsloth 2026.7.2: SDPA is wanted but the override is not active: "
            "Unsloth's dispatch picks flash_dense",
        ),
    ],
)
def test_real_unsloth_on_the_h200_with_and_without_the_override(run, tmp_path, snapshot, expected):
    """Recorded live with `sparkenv gate --import-unsloth` on an H200: real Unsloth 2026.7.2 imported in the
    probe; flash-attn there is the labelled fake of benchmarks/patch_sdpa_gpu.py (no wheel offline)."""
    r = gate(run, tmp_path, gh.live(snapshot))
    assert r.line("G2", "unsloth").startswith(expected)
    assert r.line("G2", "flash-attn") == "G2 PASS: flash-attn 2.7.4.post1 runs on the GPU"

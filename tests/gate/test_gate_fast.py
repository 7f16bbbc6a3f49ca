"""The default gate: static G1 from real ELF files (no torch import), the deadline as a promise whatever a
probe does (FIFOs, wrappers holding pipes, hung children), `--deadline` and `--facts` validation, the
facts schema under random JSON, and the fast path that never imports typer."""

from __future__ import annotations

import contextlib
import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import gate_helpers as gh
import pytest
from conftest import make_env
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from timing import assert_kept, timed, wait_for

from sparkenv.core.errors import SparkenvError
from sparkenv.core.report import LINE_RE
from sparkenv.environment import facts_file

DRIVERS = Path(__file__).parents[1] / "fixtures" / "machines" / "drivers"


@pytest.fixture(scope="module")
def nvml_lib(tmp_path_factory):
    return gh.build_nvml_stub(tmp_path_factory.mktemp("nvml"))


def static_torch(
    root: Path,
    elves,
    *,
    version: str,
    cuda: str | None,
    needs: tuple[str, ...] | None,
    runtime_present: bool = True,
) -> dict[str, str]:
    """A torch tree as a wheel installs it: torch/version.py and torch/lib/libtorch_cuda.so (a real ELF
    linked against stubs with those sonames, RUNPATH $ORIGIN/../../nvidia/cu13/lib as PyPI's torch has),
    the CUDA runtime in nvidia/cu13/lib when `runtime_present`. Nothing here is importable as torch."""
    site = root / "site"
    pkg = site / "torch"
    (pkg / "lib").mkdir(parents=True)
    (pkg / "__init__.py").write_text("raise SystemExit('the static gate must not import torch')\n")
    (pkg / "version.py").write_text(
        f"from typing import Optional\n__all__ = ['__version__']\n__version__ = '{version}'\n"
        f"debug = False\ncuda: Optional[str] = {cuda!r}\ngit_version = 'abc'\nhip: Optional[str] = None\n"
    )
    if needs is not None:
        stubs = [elves.stub(n) for n in needs]
        (root / "m.c").write_text("int torch_cuda_symbol(void) { return 3; }\n")
        subprocess.run(
            [
                "gcc",
                "-shared",
                "-fPIC",
                "-o",
                str(pkg / "lib" / "libtorch_cuda.so"),
                str(root / "m.c"),
                "-Wl,--no-as-needed",
                *map(str, stubs),
                "-Wl,--enable-new-dtags",
                "-Wl,-rpath,$ORIGIN/../../nvidia/cu13/lib",
            ],
            check=True,
            timeout=120,
            capture_output=True,
        )
        if runtime_present:
            lib = site / "nvidia" / "cu13" / "lib"
            lib.mkdir(parents=True)
            for stub, name in zip(stubs, needs, strict=True):
                (lib / name).write_bytes(stub.read_bytes())
    return {"PYTHONPATH": str(site)}


# --- static G1 --------------------------------------------------------------------------------------


def test_static_cuda13_torch_passes_and_says_how(run, tmp_path, elves, nvml_lib):
    env = static_torch(tmp_path, elves, version="2.11.0+cu130", cuda="13.0", needs=("libcudart.so.13",))
    r = run("gate", env={**env, "LD_LIBRARY_PATH": str(nvml_lib)})
    line = r.line("G1", "torch")
    assert line.startswith("G1 PASS: static: torch 2.11.0+cu130 built for CUDA 13.0; libtorch_cuda.so → ")
    assert f"libcudart.so.13 found at {tmp_path}/site/nvidia/cu13/lib/libcudart.so.13" in line
    assert r.line("G1", "runs CUDA") == (
        "G1 PASS: driver 580.159.04 runs CUDA 13.0 (GA; update unknown) of PyTorch 2.11.0+cu130 "
        "(needs >= 580.65.06)"
    )
    data = run("gate", "--json", env={**env, "LD_LIBRARY_PATH": str(nvml_lib)}).json()
    g1 = next(f for f in data["findings"] if f["id"] == "G1" and f["subject"] == "torch")
    assert any("DT_RUNPATH" in e for e in g1["evidence"]) and any("--deep" in e for e in g1["evidence"])
    assert data["context"]["mode"] == "static"


def test_static_cuda12_torch_fails(run, tmp_path, elves, nvml_lib):
    env = static_torch(tmp_path, elves, version="2.9.1+cu128", cuda="12.8", needs=("libcudart.so.12",))
    line = run("gate", env={**env, "LD_LIBRARY_PATH": str(nvml_lib)}).line("G1", "torch")
    assert line.startswith(
        "G1 FAIL: torch 2.9.1+cu128 needs CUDA 12: torch/lib/libtorch_cuda.so links libcudart.so.12 "
        "(CUDA 12) — target is CUDA 13"
    )


def test_static_cpu_only_torch_fails(run, tmp_path, elves):
    env = static_torch(tmp_path, elves, version="2.9.1+cpu", cuda=None, needs=None)
    r = run("gate", env=env)
    assert r.line("G1", "torch").startswith(
        "G1 FAIL: torch 2.9.1+cpu is a CPU-only build (torch/version.py says cuda = None; "
        "no torch/lib/libtorch_cuda.so)"
    )
    assert r.code == 1


def test_static_torch_whose_runtime_the_loader_cannot_find(run, tmp_path, elves, nvml_lib):
    env = static_torch(
        tmp_path, elves, version="2.11.0", cuda="13.0", needs=("libcudart.so.13",), runtime_present=False
    )
    # This machine may have CUDA 13 in its loader cache: an empty cache stands for one without it.
    (tmp_path / "ld.so.cache").write_bytes(b"")
    env["SPARKENV_LD_SO_CACHE"] = str(tmp_path / "ld.so.cache")
    line = run("gate", env={**env, "LD_LIBRARY_PATH": str(nvml_lib)}).line("G1", "torch")
    assert line.startswith(
        "G1 FAIL: torch 2.11.0: torch/lib/libtorch_cuda.so needs libcudart.so.13, which the loader will not "
        "find (not found in LD_LIBRARY_PATH, DT_RUNPATH, ld.so.cache, default folders)"
    )


def test_static_too_old_driver_fails_from_nvml(run, tmp_path, elves, nvml_lib):
    env = static_torch(tmp_path, elves, version="2.11.0+cu130", cuda="13.0", needs=("libcudart.so.13",))
    r = run("gate", env={**env, "LD_LIBRARY_PATH": str(nvml_lib), "STUB_NVML": "old-driver"})
    assert r.line("G1", "cannot run").startswith(
        "G1 FAIL: driver 535.104.05 cannot run CUDA 13.0 (GA; update unknown) of PyTorch 2.11.0+cu130: "
        "it needs >= 580.65.06"
    )
    assert r.code == 1


@pytest.mark.parametrize(
    ("text", "version"), [("linux-515.65.01.txt", "515.65.01"), ("open-555.42.06.txt", "555.42.06")]
)
def test_recorded_driver_texts_too_old_for_cuda13(run, tmp_path, text, version):
    facts = gh.live()
    facts["driver"] = {"proc_version": (DRIVERS / text).read_text(), "version": None}
    line = run("gate", "--facts", gh.write(tmp_path, facts)).line("G1", "driver")
    assert line.startswith(f"G1 FAIL: driver {version} cannot run CUDA 13.0 (GA; update unknown) of PyTorch")


def test_replayed_snapshots_keep_their_verdicts(run, tmp_path):
    for name in ("h200-live", "h200-live-bandwidth", "h200-unsloth-sdpa-on", "h200-unsloth-sdpa-off"):
        r = run("gate", "--facts", gh.write(tmp_path, gh.live(name), f"{name}.json"))
        assert r.line("G1", "torch").startswith(
            "G1 PASS: torch 2.11.0+cu130 built for CUDA 13.0; first CUDA"
        ), name
    assert "verdict: ready" in run("gate", "--facts", gh.write(tmp_path, gh.gb10_from_reports())).out


# --- the deadline holds -----------------------------------------------------------------------------


def test_a_fifo_as_accelerate_config_cannot_block(run, tmp_path):
    fifo = tmp_path / "f"
    os.mkfifo(fifo)
    _, baseline = timed(lambda: run("gate", "--deadline", "3"))  # this machine's pace now
    r, elapsed = timed(lambda: run("gate", "--deadline", "3", env={"ACCELERATE_CONFIG_FILE": str(fifo)}))
    assert_kept(elapsed, promised=3, baseline=baseline, what="a gate reading a FIFO as accelerate config")
    assert r.code == 0 and "verdict:" in r.out


def test_a_python_wrapper_whose_child_keeps_the_pipes_open(run, tmp_path):
    """--deep: the wrapper exits at once, its background child (own session) holds stdout and stderr."""
    pidfile = tmp_path / "child.pid"
    wrapper = tmp_path / "python-wrapper"
    wrapper.write_text(f"#!/bin/sh\nsetsid sleep 300 &\necho $! > {pidfile}\nexec sleep 300\n")
    wrapper.chmod(0o755)
    answers = tmp_path / "python-that-answers"  # the same wrapper around a python that answers at once
    answers.write_text(f'#!/bin/sh\nexec {sys.executable} "$@"\n')
    answers.chmod(0o755)
    try:
        _, baseline = timed(lambda: run("gate", "--deep", "--deadline", "3", "--python", str(answers)))
        r, elapsed = timed(lambda: run("gate", "--deep", "--deadline", "3", "--python", str(wrapper)))
        assert_kept(elapsed, promised=3, baseline=baseline, what="a deep gate whose python never answers")
        assert r.line("G1", "torch").startswith("G1 ERROR: import torch did not finish in time")
    finally:
        if pidfile.exists():
            with contextlib.suppress(ProcessLookupError, ValueError):
                os.kill(int(pidfile.read_text()), signal.SIGKILL)


def test_an_environment_whose_metadata_is_a_fifo(run, tmp_path, elves):
    env = make_env(tmp_path, elves)
    dist = env.add("peft", "0.21.0")
    python = str(env.prefix / "bin" / "python3")
    _, baseline = timed(lambda: run("gate", "--deadline", "3", "--python", python))  # METADATA a file
    (dist / "METADATA").unlink()
    os.mkfifo(dist / "METADATA")
    r, elapsed = timed(lambda: run("gate", "--deadline", "3", "--python", python))
    assert_kept(
        elapsed, promised=3, baseline=baseline, what="a gate over an environment with a FIFO METADATA"
    )
    assert "verdict:" in r.out and "Traceback" not in r.err


def test_sigterm_while_probing_kills_the_probes_process_group(tmp_path):
    site = tmp_path / "site" / "torch"
    site.mkdir(parents=True)
    marker = tmp_path / "probe.pid"
    (site / "__init__.py").write_text(
        f"import os, time\nopen({str(marker)!r}, 'w').write(str(os.getpid()))\ntime.sleep(300)\n"
    )
    env = {**os.environ, "PYTHONPATH": str(tmp_path / "site")}
    gate = subprocess.Popen(
        [sys.executable, "-m", "sparkenv", "gate", "--deep"],
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    wait_for(
        lambda: marker.exists() and marker.read_text() != "",
        timeout=60,
        what=f"the deep probe's torch import writing its pid to {marker} (gate exit {gate.poll()})",
    )
    probe_pid = int(marker.read_text())
    gate.send_signal(signal.SIGTERM)
    _, err = gate.communicate(timeout=30)
    assert (
        gate.returncode == 128 + signal.SIGTERM
        and "sparkenv: terminated (SIGTERM); the gate's probes were killed" in err
    )
    # dead: gone, or a zombie its new parent has not reaped yet (the gate waits 50 ms to reap each
    # killed child; one that took longer is re-parented when the gate exits, to a subreaper or init,
    # and a zombie still answers kill(pid, 0): the 2-core CI machine under load saw it once)
    wait_for(lambda: gh.dead(probe_pid), timeout=10, what=f"the end of the killed probe (pid {probe_pid})")


@pytest.mark.parametrize("value", ["0", "-3", "nan", "inf", "abc"])
def test_deadline_must_be_finite_and_positive(run, value):
    r = run("gate", "--deadline", value)
    assert r.code == 2 and r.out == "" and len(r.err.strip().splitlines()) == 1 and "Traceback" not in r.err
    assert "--deadline" in r.err or "'abc'" in r.err


# --- --facts inputs -----------------------------------------------------------------------------------


def test_facts_from_a_fifo_is_refused_at_once(run, tmp_path):
    fifo = tmp_path / "facts"
    os.mkfifo(fifo)
    r = run("gate", "--facts", str(fifo))
    assert r.code == 2 and r.err.startswith(f"sparkenv: error: {fifo}: ") and "not a regular file" in r.err


@pytest.mark.parametrize(
    ("change", "message"),
    [
        ({"meminfo": {"MemTotal": "lots"}}, "meminfo.MemTotal must be integer"),
        ({"workload": 5}, "workload must be array"),
        (
            {"torch": {"stages": {"first_op": {"capability": [9]}}}},
            "capability must contain at least 2 items",
        ),
        ({"smi": {"gpus": [{"temperature.gpu": "hot"}]}}, "temperature.gpu must be number or null"),
    ],
)
def test_facts_of_the_wrong_shape_are_one_line_exit_2(run, tmp_path, change, message):
    facts = {**gh.live(), **change}
    r = run("gate", "--facts", gh.write(tmp_path, facts))
    assert r.code == 2 and r.out == "" and len(r.err.strip().splitlines()) == 1
    assert message in r.err, r.err


def test_facts_nested_200k_deep(run, tmp_path):
    path = tmp_path / "deep.json"
    path.write_text('{"schema": "sparkenv.facts/1", "env": ' + "[" * 200_000 + "]" * 200_000 + "}")
    r = run("gate", "--facts", str(path))
    assert (
        r.code == 2
        and r.err.strip() == f"sparkenv: error: {path}: not a facts snapshot: JSON nested too deeply"
    )


def test_strict_policy_with_bad_facts_starts_nothing(run, tmp_path):
    """Decision: unreadable facts are bad input under every policy: exit 2, the workload does not start."""
    marker = tmp_path / "started"
    path = gh.write(tmp_path, {**gh.live(), "workload": 5})
    for policy in ("strict", "warn"):
        r = run("gate", "--facts", path, "--policy", policy, "--", "touch", str(marker))
        assert r.code == 2 and not marker.exists()


JSON = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False) | st.text(max_size=8),
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=12), inner, max_size=4),
    max_leaves=20,
)
SECTIONS = st.sampled_from(
    [
        "env",
        "workload",
        "meminfo",
        "smi",
        "gpu",
        "torch",
        "torch_static",
        "driver",
        "processes",
        "container",
        "loader",
        "configs",
        "dists",
        "kernels",
        "probe_errors",
        "mode",
        "gather_s",
    ]
)


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.dictionaries(SECTIONS, JSON, max_size=6), st.booleans())
def test_random_json_is_loaded_or_refused_never_a_crash(tmp_path_factory, sections, on_top_of_real):
    """Whatever the JSON, the loader accepts it or refuses it with one SparkenvError; what it accepts,
    the ten checks turn into contract lines (a crashing check is an ERROR line, still no traceback)."""
    from sparkenv.gate.run import evaluate
    from sparkenv.render.text import finding_line

    base = gh.live() if on_top_of_real else {"schema": "sparkenv.facts/1"}
    data = {**base, **sections}
    try:
        facts = facts_file.validate(json.loads(json.dumps(data)), "random.json")
    except SparkenvError as exc:
        assert str(exc).startswith("random.json: ") and "\n" not in str(exc)
        return
    findings, _ = evaluate(facts)
    assert {f.id for f in findings} >= {f"G{n}" for n in range(1, 11)}
    assert all(LINE_RE.match(finding_line(f)) for f in findings)


def test_the_schema_is_valid_json_schema_and_the_recordings_follow_it():
    import jsonschema

    schema = json.loads((Path(facts_file.__file__).parents[1] / "data" / "facts.schema.json").read_text())
    jsonschema.Draft7Validator.check_schema(schema)
    for path in (Path(__file__).parents[1] / "fixtures" / "facts").glob("*.json"):
        jsonschema.validate(json.loads(path.read_text()), schema)
        facts_file.validate(json.loads(path.read_text()), str(path))


# --- the fast path ------------------------------------------------------------------------------------


def test_the_fast_path_knows_every_option_the_typer_command_declares():
    import typer.main

    from sparkenv.cli.commands import app
    from sparkenv.gate import fastpath

    command = next(c for c in typer.main.get_command(app).commands.values() if c.name == "gate")
    declared = {o for p in command.params for o in p.opts if o.startswith("-")}
    assert declared - {"-h", "--help"} == set(fastpath.SPELLINGS)


@pytest.mark.parametrize(
    "argv",
    [
        [],
        ["--strict", "--quiet"],  # the old spelling of --fail-on-warn
        [
            *("--json", "--report", "r.json", "--junit", "j.xml", "--sarif", "s.sarif"),
            *("--fail-on-warn", "-q", "--select", "G1,G2", "--select", "G3", "--ignore", "G4"),
            *("--format", "json"),
            *("--waive", "G9:torch", "--waive", "G1:*", "--waivers", "w.toml", "--", "python", "train.py"),
        ],
    ],
)
def test_the_fast_path_builds_the_reporting_bundle_the_typer_command_builds(argv):
    """Both parsers of `sparkenv gate` hand the same ReportOptions to the same emit."""
    import typer.main

    from sparkenv.cli import options as cli_options
    from sparkenv.cli.commands import app
    from sparkenv.gate import fastpath
    from sparkenv.render.options import ReportOptions

    command = next(c for c in typer.main.get_command(app).commands.values() if c.name == "gate")
    ctx = command.make_context("gate", list(argv))
    shared = {p.name for p in cli_options.GATE_PARAMETERS}
    from_typer = cli_options.bundle({k: v for k, v in ctx.params.items() if k in shared})
    fast = fastpath.parse(list(argv))
    assert fast is not None and fast.reporting == from_typer
    assert set(ReportOptions._fields) == shared - {"fail_on_warn"}  # every field has its option
    if len(argv) > 2:  # every field set, repeated options in order
        assert all(getattr(fast.reporting, k) != v for k, v in ReportOptions._field_defaults.items())
        assert fast.reporting.select == ("G1,G2", "G3") and fast.reporting.waive == ("G9:torch", "G1:*")
        assert fast.workload == ["python", "train.py"]


def test_the_gate_imports_neither_typer_nor_torch(tmp_path, elves):
    env = static_torch(tmp_path, elves, version="2.11.0+cu130", cuda="13.0", needs=("libcudart.so.13",))
    proc = subprocess.run(
        [sys.executable, "-X", "importtime", "-m", "sparkenv", "gate", "-q"],
        capture_output=True,
        text=True,
        timeout=60,
        env={**os.environ, **env},
    )
    imported = {
        ln.rsplit("|", 1)[-1].strip() for ln in proc.stderr.splitlines() if ln.startswith("import time:")
    }
    assert "sparkenv.rules.cuda_major" in imported  # the gate did run its rules (rules/g1.py imports it)
    assert not imported & {"typer", "click", "pydantic", "rich", "torch"}, sorted(imported)


def test_help_and_typos_still_go_to_typer(run):
    assert "--deep" in run("gate", "--help").out
    r = run("gate", "--dedline", "3")
    assert r.code == 2 and "No such option" in r.err


# --- real H200 recordings of this version (default mode, NVML) -----------------------------------------


def test_h200_static_recording_replays(run, tmp_path):
    r = run("gate", "--facts", str(gh.FIXTURES / "facts" / "h200-static.json"))
    assert r.code == 0 and "verdict: ready" in r.lines
    assert r.line("G1", "torch") == (
        "G1 PASS: static: torch 2.11.0+cu130 built for CUDA 13.0; libtorch_cuda.so → libcudart.so.13 "
        "found at /opt/torch/.venv/lib/python3.12/site-packages/nvidia/cu13/lib/libcudart.so.13"
    )
    assert r.line("G1", "driver").startswith("G1 PASS: driver 580.159.04 runs CUDA 13.0")
    assert r.line("G4", "drawn").startswith("G4 INFO: 33°C, 94.05 W drawn, limit 700 W")


def test_h200_deep_recording_with_nvml_replays(run):
    r = run("gate", "--facts", str(gh.FIXTURES / "facts" / "h200-deep-nvml.json"))
    assert r.line("G1", "torch").startswith("G1 PASS: torch 2.11.0+cu130 built for CUDA 13.0; first CUDA")


def test_h200_gpu_process_seen_by_nvml_with_its_memory(run):
    """Recorded with a second python holding 20 GiB on the GPU beside the gate."""
    r = run("gate", "--facts", str(gh.FIXTURES / "facts" / "h200-static-gpu-process.json"))
    assert r.line("G6", "pid") == "G6 INFO: python (pid 487) holds 20998 MiB of GPU memory (15% of the GPU)"


def test_the_recorded_h200_driver_text(run, tmp_path):
    facts = gh.live("h200-static")
    facts["driver"] = {"proc_version": (DRIVERS / "h200-580.159.04.txt").read_text(), "version": None}
    facts["gpu"] = {"available": False, "error": "libnvidia-ml.so.1 not found"}
    line = run("gate", "--facts", gh.write(tmp_path, facts)).line("G1", "driver")
    assert line.startswith("G1 PASS: driver 580.159.04 runs CUDA 13.0")  # read from the /proc text


def test_static_mode_says_flash_attn_was_not_called(run, tmp_path):
    facts = gh.live("h200-static")
    facts["dists"]["flash-attn"] = "2.8.3"
    line = run("gate", "--facts", gh.write(tmp_path, facts)).line("G2", "flash-attn")
    assert line.startswith("G2 INFO: flash-attn is installed; the default gate does not call it (--deep")


# --- the deep-probe cache -----------------------------------------------------------------------------


def test_deep_cache_pays_once_per_image_driver_and_gpu(run, tmp_path, elves, nvml_lib):
    """torch here cannot import (its __init__ exits): a failing deep probe is never remembered; a passed
    one (recorded on the H200) planted under this machine's key is used instead of running torch."""
    from sparkenv.gate import deep_cache

    env = {
        **static_torch(tmp_path, elves, version="2.11.0+cu130", cuda="13.0", needs=("libcudart.so.13",)),
        "LD_LIBRARY_PATH": str(nvml_lib),
    }
    cache, dump = tmp_path / "cache", tmp_path / "facts.json"
    first = run("gate", "--deep", "--deep-cache", str(cache), "--dump-facts", str(dump), env=env)
    assert first.line("G1", "torch").startswith("G1 FAIL: import torch fails: SystemExit")
    assert not cache.exists() or not list(cache.iterdir())  # a failure is not remembered
    k = deep_cache.key(json.loads(dump.read_text()))
    assert k and deep_cache.store(str(cache), k, gh.live()["torch"], "2026-12-01T07:00:00+00:00") is None
    second = run("gate", "--deep", env={**env, "SPARKENV_GATE_DEEP_CACHE": str(cache)})
    assert second.line("G1", "torch").endswith(
        "first CUDA operation ran in 0.162 s (deep probe of 2026-12-01T07:00:00+00:00 remembered for this "
        "image, driver and GPU)"
    )
    other_driver = run("gate", "--deep", "--deep-cache", str(cache), env={**env, "STUB_NVML": "old-driver"})
    assert other_driver.line("G1", "torch").startswith("G1 FAIL")  # a new key: the probe ran again


def test_a_signal_inside_a_rules_crash_wrapper_still_stops_the_gate():
    """The gate's probe-time handler raises a KeyboardInterrupt, not an Exception: a SIGTERM that lands
    while a rule runs inside the one crash wrapper (`except Exception`) ends the gate with 128 + signal; it
    never becomes the rule's ERROR line, nor an internal error if it lands outside entry.run's handler."""
    from sparkenv import rules
    from sparkenv.core import signals
    from sparkenv.core.report import GotchaId
    from sparkenv.gate import orchestrate

    def stopped_mid_rule(_facts):
        os.kill(os.getpid(), signal.SIGTERM)  # a real signal to this process, handled by the real handler
        time.sleep(5)
        return []

    restore = orchestrate.on_signals_kill_children()
    try:
        with pytest.raises(orchestrate.Interrupted) as caught:
            rules.run_rule(GotchaId.G1, rules.Rule(rules.Stage.LIVE, stopped_mid_rule, "nothing"), None)
    finally:
        restore()
        signals._received = None  # this test process goes on
    assert isinstance(caught.value, KeyboardInterrupt) and caught.value.signum == signal.SIGTERM


def test_a_forward_compatibility_libcuda_in_the_image_is_judged(run, tmp_path):
    """A CUDA 13 image on a 575 host, with cuda-compat's libcuda 580 in the image (the driver probe reads
    it): it may stand in on a data-center GPU (a WARN); on a GB10 it does not load, so the FAIL stays."""
    facts = gh.live()
    facts["driver"] = {"proc_version": None, "version": "575.57.08", "compat_libcuda": "580.95.05"}
    line = run("gate", "--facts", gh.write(tmp_path, facts)).line("G1", "driver")
    assert line.startswith("G1 WARN: driver 575.57.08 is older than CUDA 13.0")
    assert "forward-compatibility libcuda 580.95.05" in line
    facts["torch"]["stages"]["first_op"]["name"] = "NVIDIA GB10"
    r = run("gate", "--facts", gh.write(tmp_path, facts, "gb10.json"), "--json").json()
    g1 = next(f for f in r["findings"] if f["id"] == "G1" and "driver" in f["summary"])
    assert g1["status"] == "FAIL"
    assert "forward-compatibility libcuda 580.95.05: not supported on NVIDIA GB10" in g1["evidence"]

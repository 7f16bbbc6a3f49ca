"""The gate's probes: the only code that touches the live machine. Each returns a JSON-able dict; each
has a timeout; all run at once under one overall deadline, so a hung probe never blocks a start."""

from __future__ import annotations

import concurrent.futures as cf
import json
import os
import platform
import shutil
import signal
import subprocess
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

from sparkenv import datafiles
from sparkenv.environment import container, ngc
from sparkenv.gate import parsers
from sparkenv.gate.intent import nvfp4_intent
from sparkenv.gate.servers import identify, prefilter_words

FACTS_SCHEMA = "sparkenv.facts/1"
SMI_FIELDS = [
    "index",
    "name",
    "compute_cap",
    "driver_version",
    "temperature.gpu",
    "power.draw",
    "power.limit",
    "enforced.power.limit",
    "memory.total",
    "memory.used",
    "utilization.gpu",
    "clocks_event_reasons.active",
]
SMI_FIELDS_OLD = [f.replace("clocks_event_reasons", "clocks_throttle_reasons") for f in SMI_FIELDS]
SAMPLE_FIELDS = ["temperature.gpu", "power.draw", "utilization.gpu"]
ENV_KEYS = (
    "WORLD_SIZE",
    "NNODES",
    "LOCAL_WORLD_SIZE",
    "NODE_RANK",
    "MASTER_ADDR",
    "TRITON_PTXAS_PATH",
    "NVIDIA_PYTORCH_VERSION",
    "CUDA_VERSION",
    "LD_LIBRARY_PATH",
    "BNB_CUDA_VERSION",
    "SPARKENV_SDPA",
    "ACCELERATE_CONFIG_FILE",
    "HF_HOME",
    "TP_SIZE",
    "TENSOR_PARALLEL_SIZE",
    "QUANTIZATION",
    "SPARKENV_NVFP4",
    "PIP_CONSTRAINT",
    "container",
    "CUDA_VISIBLE_DEVICES",
)


@dataclass
class Options:
    python: str = sys.executable
    workload: list[str] = field(default_factory=list)
    sample_s: float = 0.0
    bandwidth: bool = False
    import_unsloth: bool = False
    deadline_s: float = 25.0


def gather(opts: Options) -> dict[str, Any]:
    """Run every probe concurrently; whatever is not back by the deadline becomes an error entry."""
    started = time.monotonic()
    deadline = started + opts.deadline_s
    probes: dict[str, Callable[[], Any]] = {
        "torch": lambda: probe_torch(opts, deadline),
        "smi": lambda: probe_smi(opts, deadline),
        "meminfo": probe_meminfo,
        "processes": probe_processes,
        "container": probe_container,
        "loader": probe_loader,
        "dists": lambda: probe_dists(opts.python),
        "configs": lambda: probe_configs(opts.workload),
    }
    if nvfp4_intent(opts.workload, dict(os.environ)):
        probes["kernels"] = lambda: probe_kernels(opts.python)
    facts: dict[str, Any] = {
        "schema": FACTS_SCHEMA,
        "taken_at": datetime.now(timezone.utc).isoformat(timespec="seconds"),
        "host": {"machine": platform.machine(), "kernel": platform.release(), "python": opts.python},
        "env": {k: os.environ[k] for k in ENV_KEYS if k in os.environ},
        "workload": list(opts.workload),
        "probe_errors": {},
    }
    pool = cf.ThreadPoolExecutor(max_workers=len(probes), thread_name_prefix="sparkenv-probe")
    futures = {pool.submit(fn): name for name, fn in probes.items()}
    done, pending = cf.wait(futures, timeout=max(0.0, deadline - time.monotonic()))
    for fut in done:
        name = futures[fut]
        try:
            facts[name] = fut.result()
        except Exception as exc:  # a crashing probe is an ERROR line, never a traceback
            facts["probe_errors"][name] = f"{exc.__class__.__name__}: {exc}"
    for fut in pending:
        facts["probe_errors"][futures[fut]] = f"did not answer within the {opts.deadline_s:g} s deadline"
    pool.shutdown(wait=False, cancel_futures=True)
    facts["gather_s"] = round(time.monotonic() - started, 3)
    return facts


def _run(argv: list[str], timeout: float) -> subprocess.CompletedProcess[str]:
    return subprocess.run(argv, capture_output=True, text=True, timeout=max(0.5, timeout), check=False)


def probe_torch(opts: Options, deadline: float) -> dict[str, Any]:
    script = Path(__file__).with_name("torch_probe.py")
    argv = [opts.python, "-X", "utf8", str(script), "--flash"]
    if opts.bandwidth:
        argv.append("--bandwidth")
    if opts.import_unsloth:
        argv.append("--import-unsloth")
    pkgs = datafiles.load("packages")
    argv += [f"--sdpa-module={pkgs['sdpa_hook_module']}", f"--sdpa-pth={pkgs['sdpa_override_pth']}"]
    started = time.monotonic()
    try:
        proc = subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    except OSError as exc:
        return {"error": f"cannot run {opts.python}: {exc.strerror}"}
    timed_out = False
    try:
        out, err = proc.communicate(timeout=max(0.5, deadline - time.monotonic() - 0.2))
    except subprocess.TimeoutExpired:
        timed_out = True
        proc.kill()
        out, err = proc.communicate()
    stages: dict[str, Any] = {}
    for line in out.splitlines():
        try:
            record = json.loads(line)
        except ValueError:
            continue  # the workload's own prints from sitecustomize and friends: not ours
        if isinstance(record, dict) and "stage" in record:
            stages[record.pop("stage")] = record
    rc = proc.returncode
    result: dict[str, Any] = {
        "stages": stages,
        "returncode": rc,
        "timed_out": timed_out,
        "seconds": round(time.monotonic() - started, 3),
        "stderr_tail": [ln for ln in err.strip().splitlines() if ln.strip()][-5:],
    }
    if rc is not None and rc < 0:
        try:
            result["signal"] = signal.Signals(-rc).name
        except ValueError:
            result["signal"] = f"signal {-rc}"
    return result


def probe_smi(opts: Options, deadline: float) -> dict[str, Any]:
    exe = shutil.which("nvidia-smi")
    if exe is None:
        return {"available": False, "error": "nvidia-smi not found"}
    gpus: list[dict[str, Any]] = []
    error = None
    for fields in (SMI_FIELDS, SMI_FIELDS_OLD, ["index", "name", "driver_version"]):
        proc = _run([exe, f"--query-gpu={','.join(fields)}", "--format=csv"], deadline - time.monotonic())
        if proc.returncode == 0:
            gpus = [
                {k.replace("clocks_throttle_reasons", "clocks_event_reasons"): v for k, v in row.items()}
                for row in parsers.parse_smi_csv(proc.stdout)
            ]
            break
        error = (proc.stdout + proc.stderr).strip().splitlines()[-1:] or ["failed"]
    apps_proc = _run(
        [exe, "--query-compute-apps=pid,process_name,used_memory", "--format=csv"],
        deadline - time.monotonic(),
    )
    apps = parsers.parse_smi_csv(apps_proc.stdout) if apps_proc.returncode == 0 else []
    result: dict[str, Any] = {"available": True, "gpus": gpus, "apps": apps}
    if not gpus and error:
        result["error"] = error[0]
    if opts.sample_s > 0:
        result["samples"] = _sample(exe, opts.sample_s, deadline)
    return result


def _sample(exe: str, window_s: float, deadline: float) -> list[dict[str, Any]]:
    samples = []
    end = min(time.monotonic() + window_s, deadline - 0.5)
    while time.monotonic() < end:
        t = time.monotonic()
        proc = _run([exe, f"--query-gpu={','.join(SAMPLE_FIELDS)}", "--format=csv,noheader"], 5)
        rows = parsers.parse_smi_csv(proc.stdout, SAMPLE_FIELDS) if proc.returncode == 0 else []
        if rows:
            samples.append({"t": round(t, 2), **rows[0]})
        time.sleep(max(0.0, 0.5 - (time.monotonic() - t)))
    return samples


def probe_meminfo() -> dict[str, int]:
    with open("/proc/meminfo", encoding="ascii", errors="replace") as fh:
        return parsers.parse_meminfo(fh.read())


def probe_processes() -> dict[str, Any]:
    """Command lines of processes that look like inference servers or use the GPU; unreadable entries
    (other users' processes, races with exiting ones) are counted, not fatal."""
    patterns = prefilter_words()
    me = {os.getpid(), os.getppid()}
    found: list[dict[str, Any]] = []
    unreadable = 0
    for entry in os.scandir("/proc"):
        if not entry.name.isdigit() or int(entry.name) in me:
            continue
        try:
            with open(f"/proc/{entry.name}/cmdline", "rb") as fh:
                raw = fh.read(16384)
        except OSError:
            unreadable += 1
            continue
        argv = [a.decode("utf-8", "replace") for a in raw.split(b"\0") if a]
        line = " ".join(argv)
        if argv and any(p in line for p in patterns) and identify(argv):
            found.append({"pid": int(entry.name), "argv": argv})
    return {"servers": found, "unreadable": unreadable}


def probe_container() -> dict[str, Any]:
    facts = container.detect()
    image = ngc.detect(environ={})  # the variable is in the env snapshot; here only the constraint file
    return {
        "markers": list(facts.markers),
        "checked": list(facts.checked),
        "ngc": {"constraint_file": image.constraint_file, "pins": image.pins},
    }


def probe_loader() -> dict[str, Any]:
    """Where a leftover CUDA 12 runtime could be picked up by the dynamic loader."""
    hits: list[str] = []
    for d in os.environ.get("LD_LIBRARY_PATH", "").split(":"):
        if d and os.path.isdir(d):
            hits += [os.path.join(d, n) for n in sorted(os.listdir(d)) if n.startswith("libcudart.so.12")]
    ldconfig = shutil.which("ldconfig") or ("/sbin/ldconfig" if os.path.exists("/sbin/ldconfig") else None)
    if ldconfig:
        try:
            proc = _run([ldconfig, "-p"], 5)
            hits += [ln.split("=>")[-1].strip() for ln in proc.stdout.splitlines() if "libcudart.so.12" in ln]
        except (OSError, subprocess.TimeoutExpired):
            pass
    return {"libcudart12": sorted(set(hits))}


def probe_dists(python: str) -> dict[str, str]:
    from sparkenv.environment.distributions import Distribution, iter_distributions
    from sparkenv.environment.target import resolve

    out: dict[str, str] = {}
    for site in resolve(python if python != sys.executable else None).site_dirs:
        for item in iter_distributions(site, read_files=False):
            if isinstance(item, Distribution):
                out.setdefault(item.key, item.version)
    return out


def probe_kernels(python: str) -> dict[str, Any]:
    """GPU targets in the fatbins of the packages that carry NVFP4 kernels (G7), headers only."""
    from sparkenv.cuda.fatbin import read_targets
    from sparkenv.environment.distributions import Distribution, iter_distributions
    from sparkenv.environment.target import resolve

    wanted = set(datafiles.load("gate")["nvfp4"]["kernel_packages"])
    out: dict[str, Any] = {}
    for site in resolve(python if python != sys.executable else None).site_dirs:
        for dist in iter_distributions(site):
            if not isinstance(dist, Distribution) or dist.key not in wanted or dist.key in out:
                continue
            targets: set[str] = set()
            errors: list[str] = []
            paths = dist.shared_object_paths()
            for rel in paths:
                found = read_targets(os.path.join(site, rel))
                if isinstance(found, str):
                    errors.append(f"{rel}: {found}")
                else:
                    targets.update(t.name for t in found)
            out[dist.key] = {
                "version": dist.version,
                "files": len(paths),
                "targets": sorted(targets),
                "errors": errors[:5],
            }
    return out


def probe_configs(workload: list[str]) -> dict[str, Any]:
    """accelerate and DeepSpeed settings the workload will use (G10)."""
    out: dict[str, Any] = {}
    accel = parsers.option_value(workload, ("--config_file", "--config-file")) or os.environ.get(
        "ACCELERATE_CONFIG_FILE"
    )
    if not accel:
        home = os.environ.get("HF_HOME") or os.path.join(os.path.expanduser("~"), ".cache", "huggingface")
        default = os.path.join(home, "accelerate", "default_config.yaml")
        accel = default if os.path.exists(default) and any("accelerate" in a for a in workload[:2]) else None
    if accel:
        out["accelerate"] = _read_config(accel, parsers.yaml_scalars)
    ds = parsers.option_value(workload, ("--deepspeed", "--deepspeed_config"))
    if ds and ds.endswith(".json"):
        out["deepspeed"] = _read_config(ds, json.loads)
    return out


def _read_config(path: str, parse: Callable[[str], Any]) -> dict[str, Any]:
    try:
        with open(path, encoding="utf-8", errors="replace") as fh:
            data = parse(fh.read(1 << 20))
        return {"path": path, "data": data if isinstance(data, dict) else {}}
    except (OSError, ValueError) as exc:
        return {"path": path, "error": str(exc)}

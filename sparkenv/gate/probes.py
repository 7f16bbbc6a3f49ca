"""The gate's probes: the only code that touches the live machine. Each returns a JSON-able dict; all run
at once under one deadline that holds (orchestrate.py), so a hung probe never blocks a start.

Default (static) mode starts no process and imports no torch: torch's CUDA linkage is read from its
files (static_torch.py), the GPU and driver from NVML in-process (nvml.py) and /proc/driver/nvidia.
`--deep` adds the isolated torch subprocess (first CUDA operation, flash-attn call, bandwidth)."""

from __future__ import annotations

import json
import os
import signal
import sys
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from sparkenv.core import children, pool
from sparkenv.core.names import canonical as _canonical
from sparkenv.environment import parsers
from sparkenv.environment.facts_file import FACTS_SCHEMA
from sparkenv.environment.intent import nvfp4_intent
from sparkenv.environment.reading import UnreadableFile, read_text
from sparkenv.gate import early, orchestrate
from sparkenv.knowledge import gate

ENV_KEYS = (
    "WORLD_SIZE",
    "NNODES",
    "LOCAL_WORLD_SIZE",
    "NODE_RANK",
    "MASTER_ADDR",
    "TRITON_PTXAS_PATH",
    "TRITON_PTXAS_BLACKWELL_PATH",
    "TORCH_CUDA_ARCH_LIST",
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
    "RAY_ADDRESS",
    "RAY_memory_usage_threshold",
    "RAY_memory_monitor_refresh_ms",
    "SPARKENV_GATE_DEEP",
    # G10: how the launchers name nodes, ranks and addresses (sparkenv.environment.launch reads them)
    "MASTER_PORT",
    "GROUP_RANK",
    "LOCAL_RANK",
    "RANK",
    "PET_NNODES",
    "PET_NODE_RANK",
    "PET_MASTER_ADDR",
    "PET_MASTER_PORT",
    "PARALLELISM_CONFIG_TP_SIZE",
    "VLLM_HOST_IP",
    "SGLANG_HOST_IP",
    "SPARKENV_IMAGE",
    "SPARKENV_LOCK",
)


# Every section a probe can add to the facts: gate/early.py's SECTIONS (there, so that a check worker,
# which warms its checks up on them, imports no probe).
SECTIONS = early.SECTIONS


@dataclass
class Options:
    python: str = sys.executable
    workload: list[str] = field(default_factory=list)
    sample_s: float = 0.0
    bandwidth: bool = False
    import_unsloth: bool = False
    deadline_s: float = 25.0
    deep: bool = False  # the isolated torch subprocess; --bandwidth and --import-unsloth need it
    link_test: bool = False  # G10: an all-reduce between the nodes after they agree
    deep_cache: str | None = None  # folder of passed deep probes, per (image, driver, GPU)


def gather(opts: Options, meanwhile: Callable[[], None] | None = None) -> dict[str, Any]:
    """Run every probe concurrently; whatever is not back by the deadline becomes an error entry.
    `meanwhile` runs in this thread while the probes do (orchestrate.run_all)."""
    started = time.monotonic()
    deadline = started + opts.deadline_s
    deep = opts.deep or opts.bandwidth or opts.import_unsloth
    installed = _Once(lambda: installed_dists(opts.python))  # one listing for the probes that need it
    # What the workload's interpreter holds and what the machine shows, read by children forked at the
    # start (gate/early.py) when there are some for this interpreter and mode, else here.
    parts = {
        part: _early(lambda part=part: _interpreter_part(opts.python, deep, part, deadline))
        for part in early.INTERPRETER_PARTS
    }
    host = _early(lambda: early.group(early.HOST, deadline))

    def interpreter(name: str, here: Callable[[], Any]) -> Callable[[], Any]:
        part = next(p for p, names in early.INTERPRETER_PARTS.items() if name in names)
        return parts[part](name, here)

    probes: dict[str, Callable[[], Any]] = {
        "gpu": lambda: early.gpu(deadline) or _nvml(opts.sample_s, deadline),
        "driver": host("driver", probe_driver),
        "meminfo": host("meminfo", probe_meminfo),
        "processes": host("processes", lambda: probe_processes(early.child_pids())),
        "container": host("container", probe_container),
        "loader": host("loader", probe_loader),
        "dists": interpreter("dists", lambda: _versions(installed())),
        "configs": lambda: probe_configs(opts.workload),
        "torch_static": interpreter("torch_static", lambda: probe_torch_static(opts.python)),
        "multinode": lambda: probe_multinode(opts, deadline),
    }
    # The cache is keyed by what the other probes find, so with one they run first; a bandwidth or
    # Unsloth measurement is always taken now.
    cached = deep and opts.deep_cache and not (opts.bandwidth or opts.import_unsloth)
    if deep and not cached:
        probes["torch"] = lambda: probe_torch(opts, deadline)
    if nvfp4_intent(opts.workload, dict(os.environ)):
        probes["kernels"] = lambda: probe_kernels(opts.python)
    # Every package's fatbin headers take longer than the default gate's whole budget on a real CUDA 13
    # venv (benchmarks/gate_start.py): read under --deep; audit and build judge them with the same rule.
    probes["kernel_coverage"] = interpreter(
        "kernel_coverage", lambda: probe_kernel_coverage(opts.python, installed, read_kernels=deep)
    )
    facts: dict[str, Any] = {
        "schema": FACTS_SCHEMA,
        "mode": "deep" if deep else "static",
        "taken_at": time.strftime("%Y-%m-%dT%H:%M:%S+00:00", time.gmtime()),  # datetime's isoformat, UTC
        # what platform.machine() and platform.release() say, without importing platform
        "host": {"machine": os.uname().machine, "kernel": os.uname().release, "python": opts.python},
        "env": {k: os.environ[k] for k in ENV_KEYS if k in os.environ},
        "workload": list(opts.workload),
    }
    # The deadline of the probes leaves a margin for the checks, the report and exec.
    results, errors = orchestrate.run_all(probes, deadline, meanwhile)
    facts.update(results)
    if cached:
        more, late = _deep_through_cache(opts, facts, deadline)
        facts.update(more)
        errors.update(late)
    facts["probe_errors"] = {
        name: err or f"did not answer within the {opts.deadline_s:g} s deadline"
        for name, err in errors.items()
    }
    children.kill_all(spare=early.pending_checkers())  # the check workers wait for these facts
    facts["gather_s"] = round(time.monotonic() - started, 3)
    return facts


def _interpreter_part(python: str, deep: bool, part: str, deadline: float) -> dict[str, Any] | None:
    """The outcomes of the child that read this part of the interpreter's probes, else those of one
    that read them all (started so by a caller of early.start_group), else None: read here."""
    found = early.group(early.interpreter_key(python, deep, part), deadline)
    return found if found is not None else early.group(early.interpreter_key(python, deep), deadline)


def interpreter_facts(python: str, read_kernels: bool, part: str = "") -> dict[str, tuple[Any, ...]]:
    """The probes that read the workload's interpreter (dists, torch_static, kernel_coverage; or those
    of one `part` of early.INTERPRETER_PARTS), each's outcome as ("ok", value) or ("error", exception
    class name, message): run at once in a child forked at the gate's start (gate/early.py), every
    probe's failure kept for that probe alone."""
    installed = _Once(lambda: installed_dists(python))
    reads: dict[str, Callable[[], Any]] = {
        "dists": lambda: _versions(installed()),
        "torch_static": lambda: probe_torch_static(python),
        "kernel_coverage": lambda: probe_kernel_coverage(python, installed, read_kernels=read_kernels),
    }
    wanted = early.INTERPRETER_PARTS.get(part, tuple(reads))
    return {name: pool.caught(read) for name, read in reads.items() if name in wanted}


def host_facts(gate: set[int]) -> dict[str, tuple[Any, ...]]:
    """The probes that read the machine (driver, meminfo, processes, container, loader), as
    interpreter_facts gives its outcomes; `gate`: the gate's process, its parent and its children."""
    reads: dict[str, Callable[[], Any]] = {
        "driver": probe_driver,
        "meminfo": probe_meminfo,
        "processes": lambda: probe_processes(gate),
        "container": probe_container,
        "loader": probe_loader,
    }
    return {name: pool.caught(read) for name, read in reads.items()}


def _early(outcomes: Callable[[], dict[str, tuple[Any, ...]] | None]) -> Callable[..., Callable[[], Any]]:
    """probe(name, here): the probe's outcome from a group started early (`outcomes`, asked once for
    the whole group), else `here()` run in the probe's own thread."""
    once = _Once(outcomes)

    def probe(name: str, here: Callable[[], Any]) -> Callable[[], Any]:
        def run() -> Any:
            found = once()
            return pool.unwrap(found[name]) if found is not None else here()

        return run

    return probe


def _versions(installed: dict[str, tuple[str, str]]) -> dict[str, str]:
    return {name: version for name, (version, _site) in installed.items()}


class _Once:
    """A value computed once per gather, by whichever probe asks first; the others wait for it."""

    def __init__(self, fn: Callable[[], Any]) -> None:
        self._fn, self._lock, self._done = fn, threading.Lock(), False
        self._value: Any = None
        self._error: Exception | None = None

    def __call__(self) -> Any:
        with self._lock:
            if not self._done:
                try:
                    self._value = self._fn()
                except Exception as exc:  # each probe that asked reports it as its own error
                    self._error = exc
                self._done = True
        if self._error is not None:
            raise self._error
        return self._value


def _deep_through_cache(
    opts: Options, facts: dict[str, Any], deadline: float
) -> tuple[dict[str, Any], dict[str, str]]:
    """The torch probe's section from the cache when this (image, driver, GPU) passed before; else run
    it now and remember a pass."""
    from sparkenv.gate import deep_cache

    folder = str(opts.deep_cache)
    k = deep_cache.key(facts)
    record = deep_cache.load(folder, k) if k else None
    if record is not None:
        hit = {"hit": True, "key": k, "taken_at": record.get("taken_at")}
        return {"torch": record["torch"], "deep_cache": hit}, {}
    results, errors = orchestrate.run_all({"torch": lambda: probe_torch(opts, deadline)}, deadline)
    info: dict[str, Any] = {"hit": False, "key": k, "folder": folder}
    torch = results.get("torch")
    if k and isinstance(torch, dict) and deep_cache.passed(torch):
        failure = deep_cache.store(folder, k, torch, str(facts.get("taken_at")))
        info["stored"] = failure is None
        if failure:
            info["error"] = failure
    elif not k:
        info["why_not"] = "no GPU UUID, driver or torch known: nothing to key a record on"
    return {**results, "deep_cache": info}, errors


def probe_torch(opts: Options, deadline: float) -> dict[str, Any]:
    argv = early.torch_argv(opts.python, opts.bandwidth, opts.import_unsloth)
    try:
        running = early.torch(argv) or orchestrate.Bounded(argv)
    except OSError as exc:
        return {"error": f"cannot run {opts.python}: {exc.strerror}"}
    # 0.3 s before the deadline: a killed probe's partial output still makes it into the report.
    ran = running.finish(deadline - 0.3)
    stages: dict[str, Any] = {}
    for line in ran["stdout"].splitlines():
        try:
            record = json.loads(line)
        except ValueError:
            continue  # the workload's own prints from sitecustomize and friends: not ours
        if isinstance(record, dict) and isinstance(record.get("stage"), str):
            stages[record.pop("stage")] = record
    rc = ran["returncode"]
    result: dict[str, Any] = {
        "stages": stages,
        "returncode": rc,
        "timed_out": ran["timed_out"],
        "seconds": ran["seconds"],
        "stderr_tail": [ln for ln in ran["stderr"].strip().splitlines() if ln.strip()][-5:],
    }
    if ran["pipes_held"]:
        result["pipes_held"] = True
    if rc is not None and rc < 0:
        try:
            result["signal"] = signal.Signals(-rc).name
        except ValueError:
            result["signal"] = f"signal {-rc}"
    return result


def _nvml(sample_s: float, deadline: float) -> dict[str, Any]:
    from sparkenv.environment import nvml  # here only where no child read it (gate/early.py)

    return nvml.probe(sample_s, deadline)


def probe_torch_static(python: str) -> dict[str, Any]:
    """torch as the workload's `import torch` will find it: $PYTHONPATH first (the gate itself may run
    isolated, -I, but the workload does not), then the interpreter's own path."""
    from sparkenv.environment.target import host_machine, resolve
    from sparkenv.gate import static_torch

    first = [p for p in os.environ.get("PYTHONPATH", "").split(os.pathsep) if p]
    if python == sys.executable:
        return static_torch.probe([*first, *(p for p in sys.path if p)], host_machine())
    target = resolve(python)
    return static_torch.probe([*first, *map(str, target.site_dirs)], target.machine)


def probe_driver() -> dict[str, Any]:
    """The kernel module's version: there even where libnvidia-ml is not mounted into the container; and
    the image's forward-compatibility libcuda, if it carries one (G1 judges whether it can stand in)."""
    from sparkenv.environment import forward_compat, host_driver

    found = host_driver.read()
    compat = forward_compat.libcuda_version()
    if compat:
        found["compat_libcuda"] = compat
    return found


def probe_meminfo() -> dict[str, int]:
    return parsers.parse_meminfo(read_text("/proc/meminfo", what="/proc/meminfo", limit=1 << 20))


def probe_processes(gate: set[int]) -> dict[str, Any]:
    """Command lines of processes that look like inference servers or use the GPU; unreadable entries
    (other users' processes, races with exiting ones) are counted, not fatal. Not this process, its
    parent, nor `gate` (the gate's own processes, which carry its command line and the workload's)."""
    from sparkenv.environment.servers import identify, prefilter_words

    patterns = prefilter_words()
    me = {os.getpid(), os.getppid(), *gate}
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
    from sparkenv.environment import container

    facts = container.detect()
    # NGC's second marker (the variable is in the env snapshot). Only its presence: parsing its pins
    # would import packaging.requirements at every start, and the gate judges torch, not the pins.
    from sparkenv.facts.ngc import CONSTRAINT_FILE

    return {
        "markers": list(facts.markers),
        "checked": list(facts.checked),
        "ngc": {"constraint_file": CONSTRAINT_FILE if os.path.isfile(CONSTRAINT_FILE) else None},
    }


def probe_loader() -> dict[str, Any]:
    """Where a leftover CUDA 12 runtime could be picked up by the dynamic loader."""
    from sparkenv.environment import ldcache

    hits: list[str] = []
    for d in os.environ.get("LD_LIBRARY_PATH", "").split(":"):
        if d and os.path.isdir(d):
            hits += [os.path.join(d, n) for n in sorted(os.listdir(d)) if n.startswith("libcudart.so.12")]
    for soname, paths in ldcache.cache().items():
        if soname.startswith("libcudart.so.12"):
            hits += paths
    return {"libcudart12": sorted(set(hits))}


def installed_dists(python: str) -> dict[str, tuple[str, str]]:
    """canonical name -> (version, site folder) of every installed distribution, first on the path wins
    (as importlib's does), in path order.

    Read from the .dist-info folder names (`{name}-{version}.dist-info`, PEP 427), which costs one
    directory listing per site folder; only names that cannot be split so (egg-info, odd installers)
    open their metadata, through the safe reader (a FIFO there is an error entry, not a hang)."""
    from sparkenv.environment.target import resolve

    out: dict[str, tuple[str, str]] = {}
    from sparkenv.environment.target import readable

    for site in resolve(python if python != sys.executable else None).site_dirs:
        # a site folder this user cannot list is packages unknown (an ERROR), never none installed
        names = sorted(readable(site, python))
        for name in names:
            ident = _dist_identity(str(site), name)
            if ident and ident[0] not in out:
                out[ident[0]] = (ident[1], str(site))
    return out


def _dist_identity(site: str, folder: str) -> tuple[str, str] | None:
    stem, dot, kind = folder.rpartition(".")
    if not dot or kind not in ("dist-info", "egg-info"):
        return None
    name, dash, version = stem.partition("-")
    if kind == "dist-info" and dash and version[:1].isdigit() and "-" not in version:
        return _canonical(name), version
    meta = "METADATA" if kind == "dist-info" else "PKG-INFO"
    path = (
        os.path.join(site, folder, meta)
        if os.path.isdir(os.path.join(site, folder))
        else os.path.join(site, folder)
    )
    try:
        text = read_text(path, what=f"a {meta} file", limit=4 << 20)
    except UnreadableFile:
        return None
    from sparkenv.environment.distributions import parse_headers

    fields = parse_headers(text)
    name, version = (fields.get("name") or [""])[0], (fields.get("version") or [""])[0]
    return (_canonical(name), version) if name and version else None


def probe_kernel_coverage(
    python: str, installed: Callable[[], dict[str, tuple[str, str]]], *, read_kernels: bool = True
) -> dict[str, Any]:
    """G7: the GPU code of every installed distribution's shared objects (fatbin headers only; data
    sections are read where .nv_fatbin has no code for the GB10) and Triton's ptxas. Without
    `read_kernels` (the default mode) only Triton's ptxas, found in the folder listing."""
    from sparkenv.cuda import coverage
    from sparkenv.environment import kernels

    if not read_kernels:
        return kernels.gather_triton(installed(), coverage.gb10(), dict(os.environ))
    from sparkenv.environment.target import resolve

    sites = [str(s) for s in resolve(python if python != sys.executable else None).site_dirs]
    return kernels.gather(sites, coverage.gb10(), dict(os.environ))


def probe_kernels(python: str) -> dict[str, Any]:
    """GPU targets in the fatbins of the packages that carry NVFP4 kernels (G7), headers only."""
    from sparkenv.cuda.fatbin import read_targets
    from sparkenv.environment.distributions import Distribution, iter_distributions
    from sparkenv.environment.target import resolve

    wanted = set(gate().nvfp4.kernel_packages)
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
        out["accelerate"] = _read_config(accel, _yaml)
    ds = parsers.option_value(workload, ("--deepspeed", "--deepspeed_config"))
    if ds and ds.endswith(".json"):
        out["deepspeed"] = _read_config(ds, json.loads)
    # Serving launchers' YAML (their tensor- and pipeline-parallel sizes): vLLM's and SGLang's
    # `--config`, TensorRT-LLM's `--extra_llm_api_options` (older: `--config`).
    from sparkenv.environment.launch import launcher

    which = launcher(workload)
    if which in ("vllm", "sglang", "trtllm"):
        names = ("--extra_llm_api_options", "--config") if which == "trtllm" else ("--config",)
        path = parsers.option_value(workload, names)
        if path and path.endswith((".yaml", ".yml")):
            out[which] = _read_config(path, _yaml)
    return out


def _yaml(text: str) -> Any:
    """accelerate's config, read as accelerate reads it (PyYAML; imported only when a config exists)."""
    import yaml

    try:
        return yaml.safe_load(text)
    except yaml.YAMLError as exc:
        raise ValueError(f"not YAML: {str(exc).splitlines()[0]}") from None


def probe_multinode(opts: Options, deadline: float) -> dict[str, Any]:
    """G10 for a multi-node launch: link facts, NCCL settings, agreement with the peers, link test."""
    from sparkenv.environment import launch

    configs = probe_configs(opts.workload)
    env = dict(os.environ)
    plan = launch.read(opts.workload, env, configs)
    if not plan.multi_node and plan.ray_role != "driver":
        return {"multi_node": False}  # as probe.gather says it, without importing the link machinery
    from sparkenv import __version__
    from sparkenv.gate import multinode_probe as probe

    return probe.gather(opts.workload, env, configs, opts.python, deadline, __version__, opts.link_test)


def _read_config(path: str, parse: Callable[[str], Any]) -> dict[str, Any]:
    try:
        data = parse(read_text(path, what="a launcher config file", limit=1 << 20))
        return {"path": path, "data": data if isinstance(data, dict) else {}}
    except UnreadableFile as exc:
        return {"path": path, "error": exc.reason}
    except (ValueError, RecursionError) as exc:
        return {"path": path, "error": f"not readable as a config: {exc.__class__.__name__}: {exc}"[:300]}

"""rules/g6.py (G6): the words each verdict gives and the edges where they change — a server capped at
the safe fraction or above it (data/gate.toml), its cap argument absent (the server's default from
data/servers.toml) or unreadable, a server with no cap at all, each process NVML lists against the GPU's
memory or, on a GB10 that reports none, MemTotal; Ray's memory monitor; over a watched run, a process that
appears or grows. Live rows start from the H200 snapshot recorded on a real machine and the GB10's public
reports (tests/fixtures/facts); watch rows from stage_facts series."""

from __future__ import annotations

import stage_facts as sf

from sparkenv.core.report import GotchaId, Status
from sparkenv.knowledge import gate
from sparkenv.rules import g6

SAFE = gate().servers.safe_fraction
CAP_FIX = f"cap it at --gpu-memory-utilization {SAFE:g} to share the GPU, or run one big job at a time"
VLLM = ["python3", "-m", "vllm.entrypoints.openai.api_server", "--model", "m"]
POOL = "unified memory is one pool: stop it, or cap it, before it squeezes the run"


def one(found, subject):
    mine = [f for f in found if f.subject == subject]
    assert len(mine) == 1 and mine[0].id is GotchaId.G6, found
    return mine[0]


def servers(*argvs, base="h200-static", **edits):
    procs = [{"pid": 4242 + i, "argv": argv} for i, argv in enumerate(argvs)]
    return g6.live(sf.live_raw(base, processes={"servers": procs, "unreadable": 0}, **edits))


def test_vllm_at_the_safe_fraction_passes_above_it_warns():
    ok = one(servers([*VLLM, "--gpu-memory-utilization", str(SAFE)]), "pid 4242 (vLLM)")
    assert (ok.status, ok.summary) == (
        Status.PASS,
        f"vLLM (pid 4242) capped at --gpu-memory-utilization {SAFE}: a small job can run beside it",
    )
    high = [*VLLM, "--gpu-memory-utilization=0.51"]
    f = one(servers(high), "pid 4242 (vLLM)")
    assert f.status is Status.WARN
    assert f.summary == "vLLM (pid 4242) is near capacity with --gpu-memory-utilization 0.51"
    assert f.evidence == (" ".join(high),)
    assert f.fix == CAP_FIX


def test_vllm_without_its_cap_uses_its_default_and_on_a_gb10_says_the_wedge():
    f = one(servers(VLLM, base="gb10"), "pid 4242 (vLLM)")
    assert f.status is Status.WARN
    assert f.summary == (
        "vLLM (pid 4242) is near capacity with no --gpu-memory-utilization (default 0.9); above 0.85 its "
        "start-up profiling can wedge a GB10 (vllm#46307)"
    )
    assert one(servers(VLLM), "pid 4242 (vLLM)").summary == (
        "vLLM (pid 4242) is near capacity with no --gpu-memory-utilization (default 0.9)"
    )
    ceiling = gate().servers.vllm_ceiling
    at = one(servers([*VLLM, "--gpu-memory-utilization", str(ceiling)], base="gb10"), "pid 4242 (vLLM)")
    assert at.status is Status.WARN and "wedge" not in at.summary
    sglang = ["python3", "-m", "sglang.launch_server", "--mem-fraction-static", "0.9"]
    assert "wedge" not in one(servers(sglang, base="gb10"), "pid 4242 (SGLang)").summary


def test_unreadable_cap_and_a_server_without_one():
    bad = one(servers([*VLLM, "--gpu-memory-utilization", "most"]), "pid 4242 (vLLM)")
    assert (bad.status, bad.summary, bad.fix) == (
        Status.WARN,
        "vLLM (pid 4242): cannot read --gpu-memory-utilization='most'",
        "give --gpu-memory-utilization a fraction of the GPU's memory, at most 0.5 to leave room for a job "
        "beside it, and restart the server",
    )
    assert str(gate().servers.safe_fraction) in bad.fix  # the figure comes from the data file
    ollama = ["/usr/local/bin/ollama", "serve"]
    f = one(servers(ollama), "pid 4242 (Ollama)")
    assert f.status is Status.WARN
    assert (
        f.summary == "Ollama server (pid 4242) has no memory cap to read: it can grow into the unified pool"
    )
    assert f.evidence == ("/usr/local/bin/ollama serve",)
    assert f.fix == "stop it before a large job, or limit its model/context size"
    long_argv = ["llama-server", "-m", "x" * 400]
    assert one(servers(long_argv), "pid 4242 (llama.cpp)").evidence == (" ".join(long_argv)[:300],)


def test_a_long_command_line_is_cut_to_300_characters_in_the_evidence():
    long_vllm = [*VLLM, "--served-model-name", "x" * 400]
    f = one(servers(long_vllm), "pid 4242 (vLLM)")
    assert f.status is Status.WARN and f.fix == CAP_FIX
    assert f.evidence == (" ".join(long_vllm)[:300],) and len(f.evidence[0]) == 300


def test_a_server_nvml_also_lists_is_judged_once_as_the_server():
    """The server's pid is in /proc's list and in NVML's: one line, its cap's; the others still listed."""
    f = sf.live_raw(
        "h200-static",
        processes={
            "servers": [{"pid": 4242, "argv": [*VLLM, "--gpu-memory-utilization", "0.3"]}],
            "unreadable": 0,
        },
    )
    f.raw["gpu"]["apps"] = [
        {"pid": 4242, "process_name": "python3", "used_gpu_memory": 40000},
        {"pid": 7, "process_name": "python3", "used_gpu_memory": 1000},
    ]
    found = g6.live(f)
    assert [(x.subject, x.status) for x in found] == [
        ("pid 4242 (vLLM)", Status.PASS),
        ("pid 7", Status.INFO),
    ]


def test_a_gpu_total_of_zero_is_no_total():
    """A GPU that gives 0 MiB as its memory total has none to share out: a process's share is of MemTotal."""
    f = _apps(
        "gb10", used=[{"pid": 5, "process_name": "ollama", "used_gpu_memory": 70000}], **{"memory.total": 0}
    )
    f.raw["meminfo"] = {"MemTotal": 128 * 1024 * 1024}
    got = one(g6.live(f), "pid 5")
    assert got.status is Status.WARN
    assert got.summary == "ollama (pid 5) holds 70000 MiB of GPU memory (53% of unified memory (MemTotal))"
    assert got.fix == "stop or cap it before a large job: unified memory is one pool"


def test_the_workload_itself_as_a_server():
    f = one(g6.live(sf.live_raw("h200-static", workload=["vllm", "serve", "m"])), "workload")
    assert f.summary == "vLLM (the workload) is near capacity with no --gpu-memory-utilization (default 0.9)"
    plain = g6.live(sf.live_raw("h200-static", workload=["python", "train.py"]))
    assert not [x for x in plain if x.subject == "workload"]


def test_a_process_not_a_server_is_left_to_the_gpu_list():
    found = servers(["python3", "train.py"])
    assert [f.subject for f in found] == ["gpu processes"]


def _apps(base="h200-static", used=None, **gpu):
    f = sf.live_raw(base)
    section = f.raw["gpu" if "gpu" in f.raw else "smi"]
    section["apps"] = used if used is not None else []
    section["gpus"][0].update(gpu)
    return f


def test_gpu_process_share_of_the_gpu():
    total = sf.live_raw("h200-static").gpu0["memory.total"]
    over = int(total * SAFE) + 1
    f = one(g6.live(_apps(used=[{"pid": 7, "process_name": "python3", "used_gpu_memory": over}])), "pid 7")
    assert f.status is Status.WARN
    assert f.summary == f"python3 (pid 7) holds {over} MiB of GPU memory (50% of the GPU)"
    assert f.fix == "stop or cap it before a large job: unified memory is one pool"
    at = one(
        g6.live(_apps(used=[{"pid": 7, "process_name": "python3", "used_gpu_memory": total * SAFE}])), "pid 7"
    )
    assert at.status is Status.INFO and at.summary.endswith("of GPU memory (50% of the GPU)")
    old_key = one(g6.live(_apps(used=[{"pid": 8, "used_memory": 1000}])), "pid 8")
    assert old_key.summary == "pid 8 (name unknown) holds 1000 MiB of GPU memory (1% of the GPU)"
    hidden = one(g6.live(_apps(used=[{"pid": 9, "host_pid_visible": False}])), "pid 9")
    assert (hidden.status, hidden.summary) == (
        Status.INFO,
        "host pid 9 (another container's or the host's process: its name is not visible here) holds an "
        "unknown amount of GPU memory",
    )


def test_gb10_processes_against_memtotal():
    """A GB10 reports no GPU memory total: a process is judged against MemTotal, with its own share."""
    mem_kb = 128 * 1024 * 1024
    share = gate().unified_memory.other_processes_warn_fraction
    f = _apps("gb10", used=[{"pid": 5, "process_name": "ollama", "used_gpu_memory": 128 * 1024 * share + 1}])
    f.raw["meminfo"] = {"MemTotal": mem_kb}
    got = one(g6.live(f), "pid 5")
    assert got.status is Status.WARN and got.summary.endswith("(50% of unified memory (MemTotal))")
    f.raw["meminfo"] = {"MemTotal": str(mem_kb)}  # not read as a number: no share said
    unknown = one(g6.live(f), "pid 5")
    assert unknown.status is Status.INFO and unknown.summary == "ollama (pid 5) holds 65537 MiB of GPU memory"


def test_memory_beyond_the_listed_processes():
    cut = gate().unified_memory.unaccounted_info_mib
    apps = [{"pid": 7, "process_name": "python3", "used_gpu_memory": 1000}]
    f = one(g6.live(_apps(used=apps, **{"memory.used": 1000 + cut + 1})), "unlisted gpu memory")
    assert f.status is Status.INFO
    assert f.summary == (
        f"{cut + 1} MiB of GPU memory is in use beyond what the listed processes hold: processes this "
        "container cannot see (other containers, the host) or driver reservations"
    )
    at_cut = g6.live(_apps(used=apps, **{"memory.used": 1000 + cut}))
    assert not [x for x in at_cut if x.subject == "unlisted gpu memory"]


def test_nothing_seen_says_what_was_looked_at():
    f = one(g6.live(sf.live_raw("h200-static")), "gpu processes")
    assert f.summary == (
        "no other GPU-resident process or inference server (NVML lists the whole GPU, other containers "
        "included)"
    )
    bare = one(g6.live(sf.live_raw("h200-static", container={"markers": []})), "gpu processes")
    assert bare.summary == "no other GPU-resident process or inference server"
    no_list = sf.live_raw("h200-static")
    no_list.raw["gpu"]["apps_error"] = "NVML_ERROR_NOT_SUPPORTED"
    assert one(g6.live(no_list), "gpu processes").summary == (
        "no inference server among this machine's visible processes; the GPU's own process list is "
        "unavailable (NVML_ERROR_NOT_SUPPORTED), so processes of other containers are not seen"
    )
    no_gpu = sf.live_raw("h200-static", gpu={"available": False, "gpus": [], "error": "driver not loaded"})
    assert one(g6.live(no_gpu), "gpu processes").summary.endswith(
        "unavailable (driver not loaded), so processes of other containers are not seen"
    )
    nothing = sf.live_raw("h200-static", gpu={"available": True, "gpus": []})
    assert "unavailable (no GPU list)" in one(g6.live(nothing), "gpu processes").summary


def test_failed_process_probe_is_an_error():
    f = sf.live_raw("h200-static", processes=None, probe_errors={"processes": "/proc unreadable"})
    f.raw["gpu"].pop("apps")
    assert one(g6.live(f), "gpu processes").status is Status.ERROR


def test_ray_on_a_gb10():
    f = one(g6.live(sf.live_raw("gb10", env={"RAY_ADDRESS": "auto"})), "ray")
    assert f.status is Status.WARN
    assert f.summary == (
        "Ray on unified memory: its memory monitor counts GPU allocations as node memory and kills workers "
        "past RAY_memory_usage_threshold 0.95 (default)"
    )
    assert f.evidence == ("seen through RAY_ADDRESS", gate().ray.source)
    assert f.fix == (
        "size the model for MemTotal x threshold, or raise RAY_memory_usage_threshold; "
        "RAY_memory_monitor_refresh_ms=0 turns the monitor off (then the kernel OOM killer decides)"
    )
    set_ = one(g6.live(sf.live_raw("gb10", env={"RAY_memory_usage_threshold": "0.7"})), "ray")
    assert set_.summary.endswith("past RAY_memory_usage_threshold 0.7")
    by_argv = one(g6.live(sf.live_raw("gb10", env={}, workload=["/opt/bin/ray", "start", "--head"])), "ray")
    assert by_argv.evidence[0] == "seen through the workload arguments"
    flag = g6.live(
        sf.live_raw("gb10", env={}, workload=["vllm", "serve", "m", "--distributed-executor-backend=ray"])
    )
    assert one(flag, "ray").status is Status.WARN
    off = one(g6.live(sf.live_raw("gb10", env={"RAY_memory_monitor_refresh_ms": " 0 "})), "ray")
    assert (off.status, off.summary) == (
        Status.INFO,
        "Ray's memory monitor is off (RAY_memory_monitor_refresh_ms=0)",
    )
    assert not [
        x for x in g6.live(sf.live_raw("h200-static", env={"RAY_ADDRESS": "auto"})) if x.subject == "ray"
    ]
    assert not [
        x
        for x in g6.live(sf.live_raw("gb10", env={}, workload=["python", "x/ray_tune.py"]))
        if x.subject == "ray"
    ]


# --- Stage.WATCH -------------------------------------------------------------------------------------------


def _procs(*procs):
    """procs: (pid, from reading, to reading, MiB at first (None: unknown), MiB per reading, own, argv)."""

    def at(i):
        return [
            {
                "pid": pid,
                "gpu": 0,
                "used_mib": None if mib is None else mib + grow * (i - a),
                "own": own,
                "argv": argv,
                "name": argv[0].rsplit("/", 1)[-1] if argv else None,
            }
            for pid, a, b, mib, grow, own, argv in procs
            if a <= i < b
        ]

    return at


WORKLOAD = (100, 2, 30, 30000, 0, True, ("python", "train.py"))


def test_a_new_capped_server_is_named_with_its_cap():
    vllm = ("vllm", "serve", "m", "--gpu-memory-utilization", "0.3")
    f = one(
        g6.watch(sf.series(30, apps=_procs(WORKLOAD, (4242, 10, 30, 2000, 0, False, vllm)))),
        "gpu process 4242",
    )
    assert f.status is Status.WARN and f.fix == POOL and f.evidence == ()
    assert f.summary == (
        "a new GPU process vllm (pid 4242) appeared at +0:20 holding 2000 MiB; vLLM (pid 4242) capped at "
        "--gpu-memory-utilization 0.3: a small job can run beside it"
    )


def test_a_new_process_of_unknown_size():
    f = one(g6.watch(sf.series(30, apps=_procs((5, 3, 30, None, 0, False, ())))), "gpu process 5")
    assert f.summary == "a new GPU process pid 5 appeared at +0:06 holding an unknown amount of memory"


def test_growth_at_the_threshold_warns_one_mib_less_does_not():
    from sparkenv.knowledge import watch as watch_data

    grow = watch_data().processes.growth_warn_mib
    f = one(g6.watch(sf.series(2, apps=_procs((7, 0, 2, 1000, grow, False, ("ollama",))))), "gpu process 7")
    assert f.summary == f"ollama (pid 7)'s GPU memory grew {grow} MiB since +0:00 (to {1000 + grow} MiB)"
    less = g6.watch(sf.series(2, apps=_procs((7, 0, 2, 1000, grow - 1, False, ("ollama",)))))
    assert one(less, "gpu processes").summary == "no other GPU process appeared or grew over 2 s"


def test_host_pids_take_the_first_new_process_for_the_workload():
    s = sf.series(
        30,
        pids_local=False,
        apps=_procs((900, 2, 30, 30000, 0, False, ()), (901, 12, 30, 5000, 0, False, ())),
    )
    f = one(g6.watch(s), "gpu process 901")
    assert f.evidence == ("taken for the workload: the first process to appear (PIDs are the host's here)",)
    assert f.summary == "a new GPU process pid 901 appeared at +0:24 holding 5000 MiB"


def test_no_readings():
    empty = sf.series(0)
    assert [(f.status, f.subject, f.summary) for f in g6.watch(empty)] == [
        (Status.SKIP, "gpu processes", "no readings")
    ]


def test_more_from_the_full_mutant_run():
    """Memory beyond what several listed processes hold counts all of them; the workload as a vLLM server
    on a GB10 is told the wedge; `ray` as the command is Ray."""
    cut = gate().unified_memory.unaccounted_info_mib
    apps = [
        {"pid": 7, "process_name": "python3", "used_gpu_memory": 1000},
        {"pid": 8, "process_name": "python3", "used_gpu_memory": 1000},
    ]
    f = one(g6.live(_apps(used=apps, **{"memory.used": 2000 + cut + 1})), "unlisted gpu memory")
    assert f.summary.startswith(
        f"{cut + 1} MiB of GPU memory is in use beyond what the listed processes hold"
    )
    wl = one(g6.live(sf.live_raw("gb10", workload=["vllm", "serve", "m"])), "workload")
    assert wl.summary.endswith("; above 0.85 its start-up profiling can wedge a GB10 (vllm#46307)")
    ray = one(g6.live(sf.live_raw("gb10", env={}, workload=["ray", "job", "submit", "--", "x.py"])), "ray")
    assert ray.status is Status.WARN and ray.evidence[0] == "seen through the workload arguments"

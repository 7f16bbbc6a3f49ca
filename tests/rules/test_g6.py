"""rules/g6.py (live only): other GPU processes and inference servers on one memory pool."""

from __future__ import annotations

import pytest
import stage_facts as sf
from rule_table import Row, check, ids

from sparkenv.core.report import Status

VLLM = ["python3", "-m", "vllm.entrypoints.openai.api_server", "--model", "m"]


def _server(*cap: str):
    return sf.live_raw(
        "h200-static", processes={"servers": [{"pid": 4242, "argv": [*VLLM, *cap]}], "unreadable": 0}
    )


def _app(mib: float):
    f = sf.live_raw("h200-static")
    f.raw["gpu"]["apps"] = [{"pid": 777, "process_name": "python3", "used_gpu_memory": mib}]
    return f


ROWS = [
    Row(
        "g6.live",
        "nothing else on the GPU",
        lambda c: sf.live_raw("h200-static"),
        "gpu processes",
        Status.PASS,
        None,
        "no other GPU-resident process",
    ),
    Row(
        "g6.live",
        "a process holding most of the GPU",
        lambda c: _app(120_000),
        "pid 777",
        Status.WARN,
        "stop or cap it before a large job",
        "python3 (pid 777) holds 120000 MiB",
    ),
    Row("g6.live", "a small process", lambda c: _app(1_000), "pid 777", Status.INFO, None, "holds 1000 MiB"),
    Row(
        "g6.live",
        "vLLM capped low",
        lambda c: _server("--gpu-memory-utilization", "0.3"),
        "pid 4242 (vLLM)",
        Status.PASS,
        None,
        "capped at --gpu-memory-utilization 0.3",
    ),
    Row(
        "g6.live",
        "vLLM near capacity",
        lambda c: _server("--gpu-memory-utilization", "0.9"),
        "pid 4242 (vLLM)",
        Status.WARN,
        "cap it at --gpu-memory-utilization 0.5",
    ),
    Row(
        "g6.live",
        "Ray on a GB10",
        lambda c: sf.live_raw("gb10", env={"RAY_ADDRESS": "auto"}),
        "ray",
        Status.WARN,
        "raise RAY_memory_usage_threshold",
    ),
]


# --- Stage.WATCH ----------------------------------------------------------------------------------------
def _apps(*procs):
    """procs: (pid, from reading, to reading, MiB at first, MiB growth per reading, own, argv)."""

    def at(i):
        return [
            {"pid": pid, "gpu": 0, "used_mib": mib + grow * (i - a), "own": own, "argv": argv,
             "name": argv[0].rsplit("/", 1)[-1] if argv else None}
            for pid, a, b, mib, grow, own, argv in procs
            if a <= i < b
        ]  # fmt: skip

    return at


WORKLOAD = (100, 2, 30, 30000, 0, True, ("python", "train.py"))
VLLM = ("vllm", "serve", "Qwen/Qwen3-8B")

ROWS += [
    Row("g6.watch", "replayed H200: a co-tenant started mid-run",
        lambda c: sf.recorded("h200-matmul-cotenant.jsonl"), "gpu process 890", Status.WARN,
        "unified memory is one pool", "appeared at +0:24 holding 8906 MiB"),
    Row("g6.watch", "only the workload's own process", lambda c: sf.series(30, apps=_apps(WORKLOAD)),
        "gpu processes", Status.PASS, None, "no other GPU process"),
    Row("g6.watch", "an uncapped vLLM appears at +0:20",
        lambda c: sf.series(30, apps=_apps(WORKLOAD, (4242, 10, 30, 2000, 0, False, VLLM))),
        "gpu process 4242", Status.WARN, "stop it, or cap it", "vLLM (pid 4242) is near capacity"),
    Row("g6.watch", "a process there from the start grows into the pool",
        lambda c: sf.series(30, apps=_apps(WORKLOAD, (7, 0, 30, 1000, 400, False, ("ollama",)))),
        "gpu process 7", Status.WARN, "stop it, or cap it", "grew 11600 MiB"),
    Row("g6.watch", "host PIDs: the first new process is taken for the workload",
        lambda c: sf.series(30, pids_local=False, apps=_apps((900, 2, 30, 30000, 0, False, ()))),
        "gpu processes", Status.PASS),
    Row("g6.watch", "host PIDs: a second new process is another's",
        lambda c: sf.series(30, pids_local=False,
                            apps=_apps((900, 2, 30, 30000, 0, False, ()), (901, 12, 30, 5000, 0, False, ()))),
        "gpu process 901", Status.WARN, "stop it, or cap it", "a new GPU process pid 901"),
]  # fmt: skip


@pytest.mark.parametrize("row", ROWS, ids=ids(ROWS))
def test_g6(row, ctx):
    check(row, ctx)

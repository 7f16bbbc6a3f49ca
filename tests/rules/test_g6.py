"""rules/g6.py (live only): other GPU processes and inference servers on one memory pool."""

from __future__ import annotations

import pytest
import stage_facts as sf
from rule_table import Row, check, ids

from sparkenv.report import Status

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


@pytest.mark.parametrize("row", ROWS, ids=ids(ROWS))
def test_g6(row, ctx):
    check(row, ctx)

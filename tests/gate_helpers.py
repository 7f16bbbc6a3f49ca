"""Facts snapshots for gate tests: built from real machine output (tests/fixtures/machines) with the
gate's own parsers, or recorded live on a real H200 (tests/fixtures/facts)."""

from __future__ import annotations

import ast
import copy
import json
import re
from pathlib import Path
from typing import Any

from sparkenv.environment import parsers

FIXTURES = Path(__file__).parent / "fixtures"


def live(name: str = "h200-live") -> dict[str, Any]:
    return json.loads((FIXTURES / "facts" / f"{name}.json").read_text())


def _base() -> dict[str, Any]:
    return {
        "schema": "sparkenv.facts/1",
        "taken_at": "recorded",
        "host": {},
        "env": {},
        "workload": [],
        "probe_errors": {},
        "processes": {"servers": [], "unreadable": 0},
        "loader": {"libcudart12": []},
        "configs": {},
        "dists": {},
        "container": {"markers": [], "checked": []},
    }


def h200_from_outputs() -> dict[str, Any]:
    d = FIXTURES / "machines" / "h200"
    torch = json.loads((d / "torch.json").read_text())
    query = (d / "nvidia-smi-query.txt").read_text().splitlines()
    facts = _base()
    facts["smi"] = {
        "available": True,
        "gpus": parsers.parse_smi_csv("\n".join(query[:2])),
        "apps": parsers.parse_smi_csv("\n".join(query[3:])),
    }
    facts["meminfo"] = parsers.parse_meminfo((d / "meminfo.txt").read_text())
    facts["torch"] = {
        "returncode": 0,
        "stages": {
            "imported": {
                "version": torch["torch"],
                "cuda": torch["cuda"],
                "import_s": torch["import_s"],
                "cudnn": torch["cudnn"],
            },
            "devices": {"available": True, "count": 1},
            "first_op": {
                "first_op_s": torch["init_s"],
                "name": torch["name"],
                "capability": torch["cap"],
                "arch_list": torch["arch_list"],
                "mem_get_info": torch["mem_get_info"],
            },
        },
    }
    if "/.dockerenv" in (d / "system.txt").read_text():
        facts["container"]["markers"] = ["/.dockerenv exists"]
    return facts


def gb10_from_reports() -> dict[str, Any]:
    d = FIXTURES / "machines" / "gb10"
    lines = [ln for ln in (d / "nvidia-smi-query.txt").read_text().splitlines() if not ln.startswith("#")]
    ident = parsers.parse_smi_csv(lines[0], ["name", "memory.total", "driver_version"])[0]
    reading = parsers.parse_smi_csv("\n".join(lines[1:3]))[0]
    reported = {}
    for line in (d / "torch-facts.txt").read_text().splitlines():
        m = re.match(r"^(\S.*?)\s{2,}(\S.*?)\s*$", line)
        if m and not line.startswith("#"):
            reported[m.group(1)] = m.group(2)
    version = reported["torch.__version__ in NGC 25.10"].split()[0]
    cuda = reported["torch.version.cuda in NGC 25.10"]
    capability = list(ast.literal_eval(reported["torch.cuda.get_device_capability()"]))
    arch_list = ast.literal_eval(reported["get_arch_list() NGC 25.10"])
    facts = _base()
    facts["smi"] = {"available": True, "gpus": [{**ident, **reading}], "apps": []}
    facts["torch"] = {
        "returncode": 0,
        "stages": {
            "imported": {"version": version, "cuda": cuda, "import_s": 4.0, "cudnn": 91400},
            "devices": {"available": True, "count": 1},
            "first_op": {
                "first_op_s": 0.4,
                "name": reported["torch.cuda.get_device_name(0)"],
                "capability": capability,
                "arch_list": arch_list,
                "is_integrated": True,
            },
        },
    }
    facts["env"] = {"NVIDIA_PYTORCH_VERSION": "25.10", "TRITON_PTXAS_PATH": "/usr/local/cuda/bin/ptxas"}
    facts["dists"] = {"torch": version, "pytorch-triton": "3.4.0+gitc817b9b6"}
    facts["container"]["markers"] = ["/.dockerenv exists"]
    facts["probe_errors"] = {"meminfo": "not in the public GB10 reports"}
    return facts


def with_changes(facts: dict[str, Any], **changes: Any) -> dict[str, Any]:
    """A deep copy with top-level sections replaced or (for dicts given as {"+": {...}}) extended."""
    out = copy.deepcopy(facts)
    for key, value in changes.items():
        if isinstance(value, dict) and "+" in value:
            out.setdefault(key, {}).update(value["+"])
        else:
            out[key] = value
    return out


def write(tmp: Path, facts: dict[str, Any], name: str = "facts.json") -> str:
    path = tmp / name
    path.write_text(json.dumps(facts))
    return str(path)


STUB_SOURCE = Path(__file__).parent / "stubs" / "nvml_stub.c"


def build_nvml_stub(folder: Path) -> Path:
    """FAKE libnvidia-ml.so.1 (no NVIDIA driver on the test machine), compiled from tests/stubs/nvml_stub.c;
    the real pynvml loads it through the loader like NVIDIA's. Returns the folder for LD_LIBRARY_PATH."""
    import subprocess

    folder.mkdir(parents=True, exist_ok=True)
    subprocess.run(
        [
            "gcc",
            "-shared",
            "-fPIC",
            "-Wl,-soname,libnvidia-ml.so.1",
            "-o",
            "libnvidia-ml.so.1",
            str(STUB_SOURCE),
        ],
        cwd=folder,
        check=True,
        timeout=120,
        capture_output=True,
    )
    return folder


def gate_inprocess(argv: list[str]):  # type: ignore[no-untyped-def]
    """`sparkenv gate ARGV` without a new interpreter: the fast path's parser, the gate's entry, the
    evaluator and the renderer, exactly what the process runs after start-up (sparkenv/cli/entry.py), with
    stdout and stderr captured. For replays (no workload: nothing to exec). The process contract (exit
    codes, streams, a workload's exec) stays with the subprocess tests."""
    import contextlib
    import io
    import sys

    from conftest import Result

    from sparkenv.core.errors import SparkenvError
    from sparkenv.gate import entry, fastpath

    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        try:
            args = fastpath.parse(argv)
            assert args is not None and not args.workload, argv
            code = entry.run(args)
        except SparkenvError as exc:
            print(f"sparkenv: error: {exc}", file=sys.stderr)
            code = exc.exit_code
    return Result(code, out.getvalue(), err.getvalue())


def dead(pid: int) -> bool:
    """The process is gone, or a zombie nobody has reaped yet (a killed child re-parented when its parent
    exited answers kill(pid, 0) until its new parent reaps it)."""
    try:
        return Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0] in ("Z", "X")
    except OSError:  # gone
        return True

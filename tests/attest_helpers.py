"""Stage.ATTEST's facts from the records recorded on a real GPU machine (tests/fixtures/attest/, written by
the probe through tests/attest/gpu/run_all.sh on an H100), read by the stage's own reader."""

from __future__ import annotations

import dataclasses
import json
import os
from pathlib import Path
from typing import Any

from sparkenv.attest import record, run
from sparkenv.facts.attest import AttestFacts, KernelRow, ProcessRecord

FIXTURES = Path(__file__).resolve().parent / "fixtures" / "attest"


def fixture(name: str) -> Path:
    return FIXTURES / name


def facts(name: str, attention: str | None = "sdpa", **env: str) -> AttestFacts:
    """The facts `sparkenv attest --record` judges for one recorded process."""
    return run.gather(str(fixture(f"{name}.jsonl")), attention, env)


def relocated(tmp: Path, name: str, library: str) -> Path:
    """The record with the extension's path as it was on the GPU machine replaced by the fixture's copy of
    that very file (libext_ptx.so, libext_sass.so were built there by nvcc and brought back)."""
    rows = [json.loads(line) for line in fixture(f"{name}.jsonl").read_text().splitlines()]
    for row in rows:
        if row["kind"] == "libraries":
            row["paths"] = [str(fixture(library)) if p.endswith(library) else p for p in row["paths"]]
    out = tmp / f"{name}.jsonl"
    out.write_text("".join(json.dumps(r) + "\n" for r in rows))
    return out


def flash_attn_ran(tmp: Path) -> Path:
    """What the SDPA flash record would read had flash-attn's own kernels run in its place: flash-attn is not
    installed on the GPU machine, so this one is built from the real record, the kernels renamed from
    PyTorch's vendored copy (namespace pytorch_flash) to flash-attn's (namespace flash, FlashAttention-2's
    flash_fwd_kernel.h), and the SDPA operators they ran under to flash-attn's custom operators
    (flash_attn::_flash_attn_forward/backward, flash-attn 2.6+)."""
    out = []
    for line in fixture("sdpa-flash.jsonl").read_text().splitlines():
        row = json.loads(line)
        if row["kind"] == "kernel":
            row["name"] = row["name"].replace("pytorch_flash::", "flash::")
            if "flash_attention_backward" in row["under"]:
                row["under"] = "flash_attn::_flash_attn_backward"
            elif "flash_attention" in row["under"]:
                row["under"] = "flash_attn::_flash_attn_forward"
        out.append(json.dumps(row))
    path = tmp / "flash-attn-ran.jsonl"
    path.write_text("\n".join(out) + "\n")
    return path


def cut(tmp: Path, name: str, keep: int) -> Path:
    """The record as a killed process leaves it: its first `keep` lines, the last one cut mid-line."""
    lines = fixture(f"{name}.jsonl").read_text().splitlines(keepends=True)
    path = tmp / f"{name}-cut.jsonl"
    path.write_text("".join(lines[:keep]) + lines[keep][: len(lines[keep]) // 2])
    return path


def gathered(
    path: Path, attention: str | None = "sdpa", env: dict[str, str] | None = None, **changes: Any
) -> AttestFacts:
    found = run.gather(str(path), attention, env or {})
    return dataclasses.replace(found, **changes) if changes else found


def one(path: os.PathLike[str] | str) -> ProcessRecord:
    return record.read(str(path))


def one_row(row: dict[str, Any]) -> KernelRow:
    """A kernel row as the probe writes it, as the record reader makes it."""
    return KernelRow(row["name"], row["count"], row["gpu_ns"], row.get("under", ""), row.get("device", 0))

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
    """The facts `sparkenv attest --record` judges for one recorded process (NAME.jsonl), or for one run's
    folder of records (NAME/: the probe's and NVML's)."""
    where = fixture(name) if fixture(name).is_dir() else fixture(f"{name}.jsonl")
    return run.gather(str(where), attention, env)


def relocated(tmp: Path, name: str, library: str) -> Path:
    """The record (a file NAME.jsonl, or a folder NAME of records) with the library's path as it was on the
    GPU machine replaced by the fixture's copy of that very file (libext_ptx.so, libext_sass.so,
    libflash_standin.so, libmarlin_standin.so were built by nvcc and brought back): the symbol tables and
    GPU code the reader reads are then the ones that ran."""
    source = fixture(name)
    files = sorted(source.glob("*.jsonl")) if source.is_dir() else [fixture(f"{name}.jsonl")]
    out_dir = tmp / name if source.is_dir() else tmp
    out_dir.mkdir(parents=True, exist_ok=True)
    for path in files:
        rows = [json.loads(line) for line in path.read_text().splitlines()]
        for row in rows:
            if row["kind"] == "libraries":
                row["paths"] = [str(fixture(library)) if p.endswith(library) else p for p in row["paths"]]
        (out_dir / path.name).write_text("".join(json.dumps(r) + "\n" for r in rows))
    return out_dir if source.is_dir() else out_dir / files[0].name


def flash_attn_ran(tmp: Path) -> Path:
    """A model that asked for SDPA while flash-attn's kernel ran, recorded on the H100: flash_case.py with the
    flash-attn stand-in importable (tests/attest/gpu/flash_standin.cu: its kernel flash::flash_fwd_kernel,
    registered as flash-attn 2.6+ registers its own, the custom operator flash_attn::_flash_attn_forward)."""
    return relocated(tmp, "flash-attn-ran", "libflash_standin.so")


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


def on_capability(found: AttestFacts, capability: tuple[int, int] | None) -> AttestFacts:
    """The facts as if the window had run on a GPU of another capability (the records say which; None:
    records that name none)."""
    records = tuple(dataclasses.replace(r, capability=capability) for r in found.records)
    return dataclasses.replace(found, records=records)

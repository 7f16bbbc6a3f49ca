"""What the workload's processes did with the GPU during the window, read through NVML from sparkenv beside
it (no torch needed: an engine of any kind): each process's GPU memory and SM utilisation every
SAMPLE_S, into nvml-<pid>.jsonl beside the probe's records, one JSON object a line, flushed as written (a
killed sparkenv leaves a readable partial record)."""

from __future__ import annotations

import json
import os
import time
from typing import Any

from sparkenv.environment.nvml import ProcessUse
from sparkenv.environment.proctree import descendants

SAMPLE_S = 0.5
PREFIX = "nvml-"


class Recorder:
    """Samples the process tree under `root` while the window lasts; `close()` ends the record."""

    def __init__(self, run_dir: str, root: int) -> None:
        self.root = root
        self.use = ProcessUse()
        self.t0 = time.monotonic()
        self.last = -SAMPLE_S
        self.path = os.path.join(run_dir, f"{PREFIX}{root}.jsonl")
        self.fh: Any = open(self.path, "a", encoding="utf-8")  # noqa: SIM115 — open for the window's life
        self._write(
            {
                "kind": "header",
                "source": "nvml",
                "root": root,
                "host_pids": self.use.host_pids,
                "error": self.use.error,
                "started": time.time(),
            }
        )

    def _write(self, row: dict[str, Any]) -> None:
        self.fh.write(json.dumps(row, separators=(",", ":")) + "\n")
        self.fh.flush()

    def tick(self) -> None:
        """A sample, when SAMPLE_S has passed since the last one (and NVML can be read)."""
        now = time.monotonic() - self.t0
        if self.use.error is not None or now - self.last < SAMPLE_S or self.fh is None:
            return
        self.last = now
        pids = descendants(self.root)
        self._write({"kind": "sample", "t": round(now, 3), "pids": len(pids), **self.use.sample(pids)})

    def close(self) -> None:
        if self.fh is None:
            return
        self._write({"kind": "end", "t": round(time.monotonic() - self.t0, 3)})
        self.fh.close()
        self.fh = None
        self.use.close()

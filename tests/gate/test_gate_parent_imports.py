"""The gate's own process stays lean: the readers only its forked children use (the ELF and fatbin
readers, mmap, pynvml) are never imported by it, while it still imports and runs every live check. A
real gate run, its exec replaced by a listing of what its process imported (a forked child imports in
its own process: not in this listing, as it is not on the gate's path)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap

HARNESS = textwrap.dedent(
    """
    import json, os, sys
    before, path = set(sys.modules), sys.argv[1]
    def listed(*_):
        with open(path, "w") as out:
            json.dump(sorted(set(sys.modules) - before), out)
        os._exit(0)
    os.execvp = listed
    sys.argv = ["sparkenv", "gate", "-q", "--", sys.executable, "-c", "pass"]
    from sparkenv.cli import entry
    entry.main()
    """
)


def _imported(tmp_path, workers: str) -> set[str]:
    listing = tmp_path / "imported.json"
    env = {**os.environ, "SPARKENV_CACHE_DIR": str(tmp_path / "cache"), "SPARKENV_GATE_WORKERS": workers}
    proc = subprocess.run(
        [sys.executable, "-c", HARNESS, str(listing)], cwd=tmp_path, env=env, capture_output=True, timeout=60
    )
    assert listing.exists(), proc.stderr.decode()[-2000:]
    return set(json.loads(listing.read_text()))


CHILDREN_ONLY = {"sparkenv.cuda.elf", "sparkenv.cuda.fatbin", "mmap", "pynvml"}


def test_the_gate_process_imports_none_of_the_readers_its_children_use(tmp_path):
    imported = _imported(tmp_path, "0")  # no check workers: the gate judges every check itself
    assert {"sparkenv.rules.g7", "sparkenv.rules.g7_coverage", "sparkenv.render.emit"} <= imported  # judged
    assert not imported & CHILDREN_ONLY, sorted(imported & CHILDREN_ONLY)


def test_with_check_workers_the_gate_imports_the_report_not_the_checks(tmp_path):
    """The workers (gate/early.py CHECK_GROUPS) import and run the checks; the gate only reports."""
    imported = _imported(tmp_path, "1")
    assert "sparkenv.render.emit" in imported
    assert not imported & {"sparkenv.rules.g7_coverage", "sparkenv.rules.g8", "sparkenv.rules.g1_live"}
    assert not imported & CHILDREN_ONLY, sorted(imported & CHILDREN_ONLY)

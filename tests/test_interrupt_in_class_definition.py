"""A signal that lands while a class is being defined ends the command as the interrupt it is.

Python before 3.12 wraps whatever a descriptor's __set_name__ raises in a RuntimeError ("Error calling
__set_name__"), a dataclass field's included; a SIGTERM meeting the gate's import of a dataclass there ended
in an internal error (exit 70) instead of 128 + 15 (seen in tests/gate/test_gate_forked.py's SIGTERM test)."""

from __future__ import annotations

import subprocess
import sys

CODE = """
import os, signal, sys
from sparkenv.cli import process_exit

class Field:
    def __set_name__(self, owner, name):
        os.kill(os.getpid(), signal.SIGTERM)  # the signal lands here, as it did in the gate's import

def body():
    class Options:
        workload = Field()
    return 0

process_exit.run(body)
"""


def test_a_sigterm_during_set_name_is_the_interrupt_not_an_internal_error() -> None:
    proc = subprocess.run([sys.executable, "-c", CODE], capture_output=True, text=True, timeout=60)
    assert proc.returncode == 128 + 15, proc.stderr
    assert "internal error" not in proc.stderr
    assert proc.stderr.strip().splitlines()[-1].startswith("sparkenv: terminated (SIGTERM)"), proc.stderr

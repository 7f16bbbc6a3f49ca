"""Which Python the workload runs: the interpreter whose torch, packages and torch.distributed the gate
judges. The workload's argv[0] when it is a Python interpreter (`/opt/venv/bin/python -m …`), else the
interpreter its shebang names (`torchrun`, `accelerate`, `vllm`, `deepspeed` … are scripts installed into
the training venv), else none (then sparkenv's own, or --python). Reads at most the first 1 KiB of one
file; imports nothing beyond os and re, since the gate's start stays lean."""

from __future__ import annotations

import os
import re

from sparkenv.environment.interpreter import ASK_TIMEOUT, is_shim, real, which

_PYTHON = re.compile(r"python(\d+(\.\d+)?)?$")
# pip writes this two-line shebang when the interpreter's path is too long for the kernel
_EXEC = re.compile(r"^'''exec' '?\"?([^'\" ]+)")


def _is_python(path: str) -> bool:
    return bool(_PYTHON.match(os.path.basename(path)))


def _from_shebang(script: str, path: str) -> str | None:
    try:
        with open(script, "rb") as fh:
            head = fh.read(1024)
    except OSError:
        return None
    if not head.startswith(b"#!"):
        return None
    lines = head.decode("utf-8", errors="replace").splitlines()
    words = lines[0][2:].split()
    if not words:
        return None
    if os.path.basename(words[0]) == "env":  # `#!/usr/bin/env [-S] python3 …`
        rest = [w for w in words[1:] if not w.startswith("-") and "=" not in w]
        found = which(rest[0], path) if rest else None
        return found if found and _is_python(found) else None
    if _is_python(words[0]):
        return words[0] if os.path.isfile(words[0]) else None
    if os.path.basename(words[0]) == "sh" and len(lines) > 1:
        m = _EXEC.match(lines[1])
        if m and _is_python(m.group(1)) and os.path.isfile(m.group(1)):
            return m.group(1)
    return None


def ask_within(deadline_s: float) -> float:
    """How long the gate asks a shim for its interpreter: a third of its deadline at most, so the gate
    still answers within it (a shim silent that long is judged as given, by probes with their own
    timeouts)."""
    return min(ASK_TIMEOUT, max(0.2, deadline_s / 3))


def interpreter(
    workload: list[str], path: str | None = None, ask_s: float = ASK_TIMEOUT
) -> tuple[str, str] | None:
    """(interpreter, how it was found) for the workload, or None when it runs no Python we can see."""
    if not workload:
        return None
    search = os.environ.get("PATH", os.defpath) if path is None else path
    argv0 = which(workload[0], search)
    if argv0 is None:
        return None
    if _is_python(argv0):
        if is_shim(argv0):  # a pyenv shim named python3 runs another interpreter: asked, as uv asks it
            return real(argv0, "the workload's", ask_s=ask_s, keep_unanswered=True), (
                f"the workload's argv[0] ({argv0})"
            )
        return argv0, "the workload's argv[0]"
    found = _from_shebang(argv0, search)
    if found and is_shim(found):
        found = real(found, f"the shebang of {argv0}:", ask_s=ask_s, keep_unanswered=True)
    return (found, f"the shebang of {argv0}") if found else None

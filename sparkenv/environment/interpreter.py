"""An interpreter named by the user, resolved as uv resolves one: a bare name (`python3`) is looked up on
PATH, and a file that is not itself a Python binary — a pyenv or asdf shim (a shell script that execs
`pyenv exec`), a mise shim (a link to mise) — is asked for its real `sys.executable`, with a timeout. The
audit's TARGET, the gate's --python and the gate's own discovery of the workload's Python all call `real`.

Imports nothing beyond os and re until a shim must be asked: the gate's start stays lean."""

from __future__ import annotations

import os
import re
from typing import Any

from sparkenv.core.errors import SparkenvError

ASK_TIMEOUT = 15.0  # seconds a shim may take to say which interpreter it runs (a pyenv shim needs far less)
_PYTHON_BINARY = re.compile(r"python(\d+(\.\d+)?[a-z]?)?(\.exe)?$")
_ASK = "import sys; print(sys.executable)"


def which(name: str, path: str | None = None) -> str | None:
    """`name` as the shell finds it: a path when it holds a slash, else the first executable file of that
    name on PATH (`path`, default $PATH)."""
    if "/" in name:
        return name if os.path.isfile(name) else None
    found = which_all(name, path)
    return found[0] if found else None


def which_all(name: str, path: str | None = None) -> list[str]:
    """Every executable file `name` on PATH, in PATH's order, each real file once."""
    search = os.environ.get("PATH", os.defpath) if path is None else path
    out: list[str] = []
    seen: set[str] = set()
    for folder in search.split(os.pathsep):
        candidate = os.path.join(folder or ".", name)
        if os.path.isfile(candidate) and os.access(candidate, os.X_OK):
            real_file = os.path.realpath(candidate)
            if real_file not in seen:
                seen.add(real_file)
                out.append(candidate)
    return out


def is_shim(path: str) -> bool:
    """Whether `path` must be asked for its interpreter: anything but an ELF file whose real name is a
    Python's (python3, python3.12). A file that cannot be read is not asked (the caller says why)."""
    try:
        with open(path, "rb") as fh:
            magic = fh.read(4)
    except OSError:
        return False
    if magic != b"\x7fELF":
        return magic[:2] == b"#!"
    return not _PYTHON_BINARY.match(os.path.basename(os.path.realpath(path)))


def real(
    arg: str,
    what: str = "",
    path: str | None = None,
    ask_s: float = ASK_TIMEOUT,
    keep_unanswered: bool = False,
) -> str:
    """The interpreter `arg` runs: a bare name looked up on PATH (an existing file or folder of that name
    in the working folder wins, as for every path argument), a shim asked for its sys.executable. `arg`
    itself when it is neither (a folder, a Python binary, a missing file: the caller judges it).
    SparkenvError (exit 2, one line naming `what` and `arg`) when a name is not on PATH or a shim does not
    answer with an interpreter. `ask_s` bounds the question; `keep_unanswered`: a shim silent that long is
    kept as given (the gate, whose deadline outranks the question: its probes then say what they find)."""
    label = f"{what} {arg}".strip()
    found = arg
    if "/" not in arg and not os.path.lexists(arg):
        on_path = which(arg, path)
        if on_path is None:
            raise SparkenvError(f"{label}: no such file, and no {arg} on PATH")
        found = on_path
    if not os.path.isfile(found) or not is_shim(found):
        return found
    return _ask(found, label, ask_s, keep_unanswered)


def _ask(shim: str, label: str, ask_s: float, keep_unanswered: bool) -> str:
    import subprocess

    from sparkenv.core import children

    try:
        proc = children.spawn([shim, "-c", _ASK], stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    except OSError as exc:
        raise SparkenvError(f"{label}: cannot run it to ask for its interpreter: {exc.strerror}") from None
    try:
        # the asked process's own exit, not the pipes' end: a child it leaves behind (a setsid daemon of a
        # wrapper) may hold them open; what the interpreter printed is in the pipe by then
        children.wait(proc, ask_s)
    except subprocess.TimeoutExpired:
        children.stop(proc)
        if keep_unanswered:
            return shim
        raise SparkenvError(
            f"{label}: asked for its interpreter ({shim} -c '{_ASK}'), it did not answer within {ask_s:g} s"
        ) from None
    out, err = _printed(proc.stdout), _printed(proc.stderr)
    children.stop(proc)
    lines = out.strip().splitlines()
    answer = lines[-1].strip() if lines else ""
    if proc.returncode != 0 or not os.path.isabs(answer) or not os.path.isfile(answer):
        said = (err.strip().splitlines() or lines or ["nothing"])[-1][:200]
        raise SparkenvError(
            f"{label}: not a Python interpreter: asked for its sys.executable, it exited "
            f"{proc.returncode} and said {said!r}"
        )
    return answer


def _printed(stream: Any) -> str:
    """What is in a pipe now, without waiting for its end (another process may still hold it)."""
    fd = stream.fileno()
    os.set_blocking(fd, False)
    chunks = []
    try:
        while chunk := os.read(fd, 65536):
            chunks.append(chunk)
    except BlockingIOError:
        pass
    finally:
        stream.close()
    return b"".join(chunks).decode(errors="replace")

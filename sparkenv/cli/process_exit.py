"""How every sparkenv process starts its output and ends: shared by the typer CLI (sparkenv.cli.commands) and
the gate's fast path (sparkenv.cli.entry), so both survive any stream encoding and end with the same lines."""

from __future__ import annotations

import errno
import os
import sys
from collections.abc import Callable
from typing import Any, TextIO

from sparkenv.core.errors import SparkenvError
from sparkenv.core.redact import redact

BROKEN_PIPE_EXIT = 128 + 13  # what a shell reports for a writer killed by SIGPIPE (`sparkenv … | head`)


class OutputFailed(SparkenvError):
    """stdout or stderr cannot be written (a closed pipe, a full device, a closed descriptor): one line
    on stderr, exit 141 for a broken pipe (as a shell's SIGPIPE) and 3 for the rest (the output device
    failed, not the input)."""

    def __init__(self, name: str, exc: OSError) -> None:
        self.stream = name
        broken = exc.errno == errno.EPIPE
        self.exit_code = BROKEN_PIPE_EXIT if broken else 3
        why = f"cannot be written: {exc.strerror}"
        if broken:
            why = "closed early (broken pipe); output cut short"
        super().__init__(f"{name} {why}")


class GuardedStream:
    """sys.stdout / sys.stderr, whose write and flush raise OutputFailed instead of a bare OSError, so
    a failing output is never an internal error (exit 70), whatever code was writing."""

    def __init__(self, stream: TextIO, name: str) -> None:
        self._stream = stream
        self._name = name

    def write(self, text: str) -> int:
        try:
            return self._stream.write(text)
        except (OSError, ValueError) as exc:  # ValueError: the stream was closed (`exec 1>&-` then write)
            raise _failure(self._name, exc) from None

    def writelines(self, lines: Any) -> None:
        for line in lines:
            self.write(line)

    def flush(self) -> None:
        try:
            self._stream.flush()
        except (OSError, ValueError) as exc:
            raise _failure(self._name, exc) from None

    def __getattr__(self, name: str) -> Any:
        return getattr(self._stream, name)


def _failure(name: str, exc: OSError | ValueError) -> OutputFailed:
    if isinstance(exc, OSError):
        return OutputFailed(name, exc)
    return OutputFailed(name, OSError(errno.EBADF, "closed"))


def survive_any_encoding() -> None:
    """A character the stream cannot take (a typographic dash under PYTHONIOENCODING=ascii or a C
    locale) is replaced, never fatal; a stream that cannot be written at all (`> /dev/full`, a closed
    stdout, a reader that went away) ends the run with one line (OutputFailed), never exit 70."""
    for stream in (sys.stdout, sys.stderr):
        reconfigure = getattr(stream, "reconfigure", None)
        # surrogateescape too: it writes raw bytes for lone surrogates but fails on a dash under ascii
        if reconfigure is not None and getattr(stream, "errors", "strict") in ("strict", "surrogateescape"):
            reconfigure(errors="replace")
    # a descriptor closed before the start (`sparkenv audit >&-`) leaves sys.stdout None: print() would
    # drop every line silently and sys.stdout.write raise AttributeError
    if not isinstance(sys.stdout, GuardedStream):
        sys.stdout = GuardedStream(sys.stdout or _Closed(), "stdout")  # type: ignore[assignment]
    if not isinstance(sys.stderr, GuardedStream):
        sys.stderr = GuardedStream(sys.stderr or _Closed(), "stderr")  # type: ignore[assignment]


class _Closed:
    """The stream behind a descriptor that was closed when sparkenv started."""

    encoding = "utf-8"
    errors = "replace"

    def write(self, text: str) -> int:
        raise OSError(errno.EBADF, "the descriptor was closed before sparkenv started")

    def flush(self) -> None:
        return None

    def isatty(self) -> bool:
        return False

    def fileno(self) -> int:
        raise OSError(errno.EBADF, "closed")


def run(
    body: Callable[[], int | None],
    *,
    cleanup: Callable[[], str | None] | None = None,
    finish: Callable[[int], object] = sys.exit,
) -> int | None:
    """The one way a command ends, for the typer app and both fast paths: the streams made safe and the
    signal handlers in place, then `body`; its result is returned (None: the typer command answers
    instead). A SparkenvError is one line and its exit code, an interrupt the closing line and 128 +
    signal, anything else an internal error (exit 70); `cleanup` runs first on every one of these ways
    out (what it cleaned, when it says, is reported on an interrupt), and `finish` exits."""
    from sparkenv.core import signals

    survive_any_encoding()
    signals.install()
    try:
        return body()
    except OutputFailed:
        if cleanup:
            cleanup()
        raise  # guarded() says it in one line
    except SparkenvError as exc:
        if cleanup:
            cleanup()
        print(f"sparkenv: error: {exc}", file=sys.stderr)
        finish(exc.exit_code)
    except KeyboardInterrupt:
        _interrupted(cleanup)
    except Exception as exc:
        if isinstance(exc.__cause__, KeyboardInterrupt):
            # Python before 3.12 wraps what a descriptor's __set_name__ raises in a RuntimeError: a signal
            # landing while a class (a dataclass field) is being defined is still the interrupt it was
            _interrupted(cleanup)
        if cleanup:
            cleanup()
        internal_error(exc)
    return None  # not reached: every way out above exits


def _interrupted(cleanup: Callable[[], str | None] | None) -> None:
    """Clean up, add what was cleaned to the closing line, and end as the signal that stopped the run."""
    from sparkenv.core import signals

    cleaned = cleanup() if cleanup else None
    if cleaned:
        signals.cleaned(cleaned)
    stopped(signals.received())


def guarded(body: Callable[[], None]) -> None:
    """Run a command's main function; a failing stdout/stderr, met while it ran or when its last output
    is flushed before exit (else the interpreter's own flush at shutdown fails: exit 120 and a
    traceback-like message), ends it with OutputFailed's one line and exit status."""
    try:
        try:
            body()
        finally:
            if sys.stdout is not None:
                sys.stdout.flush()
    except OutputFailed as exc:
        output_failed(exc)


def leave(code: int) -> None:
    """Exit with `code` without the interpreter's teardown (tens of milliseconds freeing every module and
    object of a process that ends anyway: `sparkenv lock` has loaded several hundred): output flushed (a
    failure is OutputFailed, as at a normal exit), atexit handlers run. Only when no thread but daemons is
    left (a normal exit would wait for those); else a normal exit."""
    import atexit
    import threading

    if any(t.is_alive() and not t.daemon for t in threading.enumerate() if t is not threading.main_thread()):
        sys.exit(code)
    for stream in (sys.stdout, sys.stderr):
        if stream is not None:
            stream.flush()
    atexit._run_exitfuncs()
    os._exit(code)


def output_failed(exc: OutputFailed) -> None:
    """Say that an output failed, on whichever stream still works, and exit; the dead stream is pointed
    at /dev/null first so the interpreter's last flush cannot fail again."""
    fd_of = {"stdout": 1, "stderr": 2}
    with _suppress_os():
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, fd_of.get(exc.stream, 1))
        os.close(devnull)
    if exc.stream != "stderr":
        with _suppress_os():
            print(f"sparkenv: error: {exc}", file=sys.stderr, flush=True)
    sys.exit(exc.exit_code)


def _suppress_os() -> Any:
    import contextlib

    return contextlib.suppress(OSError, ValueError, OutputFailed)


def stopped(signum: int | None) -> None:
    from sparkenv.core import signals

    line, code = signals.closing_line(signum)
    print(line, file=sys.stderr)
    sys.exit(code)


def internal_error(exc: Exception) -> None:
    """A bug: one line and exit 70, or the traceback under SPARKENV_DEBUG=1. An OSError of the machine
    (a full device, a file size limit, a file name too long: errors.os_fault) met where no reader or
    writer named it is not a bug: its one line and exit code instead."""
    from sparkenv.core.errors import os_fault

    fault = os_fault(exc) if isinstance(exc, OSError) else None
    if fault is not None:
        print(f"sparkenv: error: {fault}", file=sys.stderr)
        sys.exit(fault.exit_code)
    if os.environ.get("SPARKENV_DEBUG"):
        raise exc
    print(
        "sparkenv: internal error: please report, with SPARKENV_DEBUG=1 output: "
        f"{exc.__class__.__name__}: {redact(str(exc))}",
        file=sys.stderr,
    )
    sys.exit(70)

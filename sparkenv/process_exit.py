"""How every sparkenv process starts its output and ends: shared by the typer CLI (sparkenv.cli) and
the gate's fast path (sparkenv.entry), so both survive any stream encoding and end with the same lines."""

from __future__ import annotations

import os
import sys

from sparkenv.redact import redact


def survive_any_encoding() -> None:
    """A character the stream cannot take (a typographic dash under PYTHONIOENCODING=ascii or a C
    locale) is replaced, never fatal."""
    for stream in (sys.stdout, sys.stderr):
        reconfigure = getattr(stream, "reconfigure", None)
        # surrogateescape too: it writes raw bytes for lone surrogates but fails on a dash under ascii
        if reconfigure is not None and getattr(stream, "errors", "strict") in ("strict", "surrogateescape"):
            reconfigure(errors="replace")


def stopped(signum: int | None) -> None:
    from sparkenv import signals

    line, code = signals.closing_line(signum)
    print(line, file=sys.stderr)
    sys.exit(code)


def internal_error(exc: Exception) -> None:
    """A bug: one line and exit 70, or the traceback under SPARKENV_DEBUG=1."""
    if os.environ.get("SPARKENV_DEBUG"):
        raise exc
    print(
        "sparkenv: internal error: please report, with SPARKENV_DEBUG=1 output: "
        f"{exc.__class__.__name__}: {redact(str(exc))}",
        file=sys.stderr,
    )
    sys.exit(70)

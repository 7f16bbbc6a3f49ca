"""Errors that end a command with a one-line message and a documented exit code."""

from __future__ import annotations

import contextlib
from collections.abc import Iterator


class SparkenvError(Exception):
    """Bad usage or unreadable input: exit code 2. Its message is printed without credentials."""

    exit_code = 2

    def __str__(self) -> str:
        from sparkenv.core.redact import redact

        return redact(super().__str__())


class ServiceMissing(SparkenvError):
    """A service the command needs is absent (Docker engine, resolver): exit code 3."""

    exit_code = 3


class WriteFailed(SparkenvError):
    """A file sparkenv writes (a temporary for uv, a watch record, a cache entry) hit the end of its
    device: a full disk or quota, or the process's file size limit (`ulimit -f`). The device failed, not
    the input: exit code 3."""

    exit_code = 3


def os_fault(exc: OSError, path: object = None) -> SparkenvError | None:
    """The one-line error an OSError of the machine (not of sparkenv) ends a command with, naming the
    file (`path`, else the error's own): a full device, quota or file size limit (exit 3), a file name
    too long (exit 2). None for any other OSError, which stays a bug to report."""
    import errno

    from sparkenv.core.printable import printable

    full = {
        errno.ENOSPC: "no space left on the device",
        errno.EDQUOT: "disk quota exceeded",
        # os.strerror's "File too large" hides the cause
        errno.EFBIG: "file too large for the process's file size limit (ulimit -f)",
    }
    where = path if path is not None else exc.filename
    named = f"{printable(str(where))}: " if where is not None else ""
    if exc.errno in full:
        return WriteFailed(f"{named}cannot write: {full[exc.errno]}")
    if exc.errno == errno.ENAMETOOLONG:
        return SparkenvError(f"{named}file name too long")
    return None


@contextlib.contextmanager
def writing(path: object) -> Iterator[None]:
    """Around a write of `path`: a full device, a file size limit or a name too long becomes its one-line
    error naming `path` (os_fault); any other OSError goes on as it was."""
    try:
        yield
    except OSError as exc:
        fault = os_fault(exc, path)
        if fault is None:
            raise
        raise fault from None

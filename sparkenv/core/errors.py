"""Errors that end a command with a one-line message and a documented exit code."""

from __future__ import annotations


class SparkenvError(Exception):
    """Bad usage or unreadable input: exit code 2. Its message is printed without credentials."""

    exit_code = 2

    def __str__(self) -> str:
        from sparkenv.core.redact import redact

        return redact(super().__str__())


class ServiceMissing(SparkenvError):
    """A service the command needs is absent (Docker engine, resolver): exit code 3."""

    exit_code = 3

"""The marker environment of a target: requirement markers are evaluated for the machine that will run
the code (the profile's, the audited environment's, the image's), never for the host running sparkenv."""

from __future__ import annotations


def marker_environment(machine: str, python: str | None) -> dict[str, str]:
    """PEP 508 marker values for Linux CPython `python` ("3.12" or "3.12.3") on `machine`.

    Without a known Python version 3.12 is assumed: the Python of every NGC PyTorch image we profile.
    """
    version = python or "3.12"
    parts = version.split(".")
    full = version if len(parts) >= 3 else f"{'.'.join(parts[:2])}.0"
    return {
        "implementation_name": "cpython",
        "implementation_version": full,
        "os_name": "posix",
        "platform_machine": machine,
        "platform_python_implementation": "CPython",
        "platform_release": "",
        "platform_system": "Linux",
        "platform_version": "",
        "python_full_version": full,
        "python_version": ".".join(parts[:2]),
        "sys_platform": "linux",
        "extra": "",
    }

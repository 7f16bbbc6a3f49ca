"""The marker environment of a target: requirement markers are evaluated for the machine that will run
the code (the profile's, the audited environment's, the image's), never for the host running sparkenv."""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from packaging.markers import Marker


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


# (marker text, environment) -> whether it holds: a lock evaluates the same few hundred markers thousands
# of times (every edge, every extra, every rule that walks the graph); each evaluation parses nothing new
# but walks the marker's tree, ~0.1 ms apiece.
_HOLDS: dict[tuple[str, tuple[tuple[str, str], ...]], bool] = {}


def holds(marker: Marker, env: Mapping[str, str], extra: str | None = None) -> bool:
    """`marker.evaluate(env)`, with `extra` set when given; remembered for this process. A marker that
    cannot be evaluated raises as evaluate does, and is not remembered."""
    values = dict(env) if extra is None else {**env, "extra": extra}
    key = (str(marker), tuple(sorted(values.items())))
    found = _HOLDS.get(key)
    if found is None:
        found = _HOLDS[key] = bool(marker.evaluate(values))
    return found

"""The marker environment of a target: requirement markers are evaluated for the machine that will run
the code (the profile's, the audited environment's, the image's), never for the host running sparkenv."""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
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


# (marker text, environment without "extra", extra) -> whether it holds: a lock evaluates the same few
# hundred markers thousands of times (every edge, every extra, every rule that walks the graph); the
# answer depends on nothing else.
_HOLDS: dict[tuple[str, tuple[tuple[str, str], ...], str], bool] = {}


def applies(marker: Marker | None, env: Mapping[str, str], extras: Iterable[str] = ("",)) -> bool:
    """Whether a requirement's marker holds on the target described by `env` (marker_environment), for
    any of `extras` ("" is the requirement asked for without an extra). No marker holds everywhere.

    The one evaluation of every stage (declared, resolved, the lock's graph, fallbacks, the audit's
    Requires-Dist, the image's own dependencies): a marker packaging cannot evaluate on this target (an
    operator undefined for its values, `platform_machine ~= "x86"`) does not hold, at every stage alike.
    Each answer is remembered for the process.
    """
    if marker is None:
        return True
    return _holds(marker, env, _base(env), extras)


def evaluator(env: Mapping[str, str]) -> Callable[[Marker | None, Iterable[str]], bool]:
    """`applies` for one target, its environment read once: for a caller that asks thousands of times
    (the lock's graph). The environment is copied: a later change to the caller's dict does not count."""
    env = dict(env)
    base = _base(env)

    def holds(marker: Marker | None, extras: Iterable[str] = ("",)) -> bool:
        return True if marker is None else _holds(marker, env, base, extras)

    return holds


def _base(env: Mapping[str, str]) -> tuple[tuple[str, str], ...]:
    return tuple(sorted((k, v) for k, v in env.items() if k != "extra"))


def _holds(
    marker: Marker, env: Mapping[str, str], base: tuple[tuple[str, str], ...], extras: Iterable[str]
) -> bool:
    from packaging.markers import UndefinedComparison, UndefinedEnvironmentName

    text = _text(marker)
    for extra in extras:
        key = (text, base, extra)
        found = _HOLDS.get(key)
        if found is None:
            try:
                found = bool(marker.evaluate({**env, "extra": extra}))
            except (UndefinedComparison, UndefinedEnvironmentName):
                found = False
            _HOLDS[key] = found
        if found:
            return True
    return False


# id(marker) -> (the marker, its text): packaging writes a marker's text anew on every str() (a tree
# walk); the marker is kept so that its id is not reused for another within the process
_TEXTS: dict[int, tuple[Marker, str]] = {}


def _text(marker: Marker) -> str:
    found = _TEXTS.get(id(marker))
    if found is None or found[0] is not marker:
        found = _TEXTS[id(marker)] = (marker, str(marker))
    return found[1]

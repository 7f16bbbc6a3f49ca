"""Inside an NGC PyTorch image or not: one decision for the audit (a mounted or live root) and the gate.

An NGC image says so two ways: `$NVIDIA_PYTORCH_VERSION` (set by the image) and `/etc/pip/constraint.txt`
(the versions it built with). Either is enough; an audit of a mounted image sees only the file, a gate
started with a cleaned environment only the file too, so both stages read both.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

CONSTRAINT_FILE = "/etc/pip/constraint.txt"
RELEASE_VARIABLE = "NVIDIA_PYTORCH_VERSION"


@dataclass(frozen=True)
class NgcFacts:
    release: str | None  # $NVIDIA_PYTORCH_VERSION, e.g. "25.10"
    constraint_file: str | None  # its path when present
    pins: dict[str, str] = field(default_factory=dict)  # normalized name -> version the image built with

    @property
    def detected(self) -> bool:
        return bool(self.release or self.constraint_file)

    def markers(self) -> list[str]:
        found = []
        if self.release:
            found.append(f"{RELEASE_VARIABLE}={self.release}")
        if self.constraint_file:
            found.append(f"{self.constraint_file} present")
        return found

    def describe(self) -> str:
        return f"NGC image {self.release}" if self.release else "NGC image"


def from_snapshot(env: Mapping[str, str], ngc_section: Mapping[str, Any] | None) -> NgcFacts:
    """The gate's view: its environment snapshot and what the container probe read of the file."""
    section = ngc_section or {}
    pins = section.get("pins") if isinstance(section.get("pins"), dict) else {}
    return NgcFacts(
        env.get(RELEASE_VARIABLE) or None,
        section.get("constraint_file") or None,
        {str(k): str(v) for k, v in (pins or {}).items()},
    )

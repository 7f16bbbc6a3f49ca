"""Is this an NGC PyTorch image, and which versions did the image pin (/etc/pip/constraint.txt)?"""

from __future__ import annotations

import os
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path

from packaging.requirements import InvalidRequirement, Requirement
from packaging.utils import canonicalize_name

CONSTRAINT_FILE = "etc/pip/constraint.txt"


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
            found.append(f"NVIDIA_PYTORCH_VERSION={self.release}")
        if self.constraint_file:
            found.append(f"{self.constraint_file} present")
        return found


def detect(root: Path = Path("/"), environ: Mapping[str, str] | None = None) -> NgcFacts:
    live = root == Path("/")
    environ = os.environ if environ is None and live else (environ or {})
    path = root / CONSTRAINT_FILE
    try:
        text = path.read_text(encoding="utf-8", errors="replace")
    except OSError:
        text = None
    pins: dict[str, str] = {}
    for line in (text or "").splitlines():
        line = line.split("#", 1)[0].strip()
        if not line:
            continue
        try:
            req = Requirement(line)
        except InvalidRequirement:
            continue  # the image's own file; a line we cannot read pins nothing we can compare
        exact = [s.version for s in req.specifier if s.operator in ("==", "===")]
        if exact:
            pins[canonicalize_name(req.name)] = exact[0]
    return NgcFacts(
        environ.get("NVIDIA_PYTORCH_VERSION") or None,
        f"/{CONSTRAINT_FILE}" if text is not None else None,
        pins,
    )

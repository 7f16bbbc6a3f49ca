"""The audit's reading of the NGC markers under a root: $NVIDIA_PYTORCH_VERSION and the pins of
/etc/pip/constraint.txt. What they mean is decided in sparkenv/facts/ngc.py."""

from __future__ import annotations

import os
from collections.abc import Mapping
from pathlib import Path

from sparkenv.core import safe_read
from sparkenv.core.pins import exact_pin
from sparkenv.facts.ngc import CONSTRAINT_FILE as NGC_CONSTRAINT_FILE
from sparkenv.facts.ngc import RELEASE_VARIABLE, NgcFacts

CONSTRAINT_FILE = NGC_CONSTRAINT_FILE.lstrip("/")  # read under a root: the mounted image's


def detect(root: Path = Path("/"), environ: Mapping[str, str] | None = None) -> NgcFacts:
    live = root == Path("/")
    environ = os.environ if environ is None and live else (environ or {})
    path = root / CONSTRAINT_FILE

    try:  # under --root this is a mounted image's file: a FIFO or device there must not hang the audit
        text = safe_read.read_text(path, what="a pip constraint file", limit=16 << 20, errors="replace")
    except safe_read.UnreadableFile:
        text = None
    pins: dict[str, str] = {}
    if text:  # packaging only where there is a file to read: an unchanged audit's start counts
        from packaging.requirements import InvalidRequirement, Requirement
        from packaging.utils import canonicalize_name
    for line in (text or "").splitlines():
        line = line.split("#", 1)[0].strip()
        if not line:
            continue
        try:
            req = Requirement(line)
        except InvalidRequirement:
            continue  # the image's own file; a line we cannot read pins nothing we can compare
        exact = exact_pin(req.specifier)
        if exact:
            pins[canonicalize_name(req.name)] = exact
    return NgcFacts(
        environ.get(RELEASE_VARIABLE) or None,
        f"/{CONSTRAINT_FILE}" if text is not None else None,
        pins,
    )

"""What the host tests share: the Docker engine or a skip (a failure under SPARKENV_REQUIRE_DOCKER=1),
a report's finding by subject, the report schema."""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

from build_helpers import skip_unless_required

from sparkenv.host import docker_probe

ROOT = Path(__file__).resolve().parents[2]
FIXTURES = ROOT / "tests" / "fixtures" / "host"


def engine_or_skip() -> dict[str, Any]:
    """The local engine's /info facts as `sparkenv host` reads them, or skip (fail when CI requires it)."""
    host = os.environ.get("DOCKER_HOST") or docker_probe.DEFAULT_HOST
    found = docker_probe.engine_facts(host, 10.0)
    if not found.get("answered"):
        skip_unless_required(f"no Docker engine answers ({found.get('error')})")
    return found


def finding(report: dict[str, Any], subject: str) -> dict[str, Any]:
    found = [f for f in report["findings"] if f["subject"] == subject]
    assert len(found) == 1, (
        f"expected one finding about {subject!r}: {json.dumps(report['findings'], indent=1)}"
    )
    return found[0]


def report_schema() -> dict[str, Any]:
    return json.loads((ROOT / "sparkenv" / "data" / "report.schema.json").read_text())

"""Run `sparkenv host`: gather the host's facts (or replay a snapshot), write them if asked, judge them
with the registry's host rules, build the report."""

from __future__ import annotations

import json
import math
from dataclasses import dataclass
from typing import Any

from sparkenv import rules
from sparkenv.core import outputs
from sparkenv.core.errors import SparkenvError
from sparkenv.core.report import Report
from sparkenv.environment import facts_file
from sparkenv.facts.host import HostFacts
from sparkenv.host import probes


@dataclass(frozen=True)
class HostArgs:
    image: str | None = None
    timeout: float = 60.0
    dump_facts: str | None = None
    facts: str | None = None


def check(a: HostArgs) -> HostArgs:
    """Usage errors before any probe (exit 2)."""
    if not (math.isfinite(a.timeout) and a.timeout > 0):
        raise SparkenvError(f"--timeout {a.timeout:g}: give a finite number of seconds above 0")
    if a.facts and a.image:
        raise SparkenvError("--image runs a container on this machine; it cannot go with --facts (a replay)")
    if a.image is not None and not a.image.strip():
        raise SparkenvError("--image: give an image reference (nvcr.io/nvidia/pytorch:25.11-py3)")
    return a


def facts_of(a: HostArgs) -> tuple[dict[str, Any], str]:
    if a.facts:
        return facts_file.load(a.facts), f"replayed from {a.facts}"

    return probes.gather(probes.Options(image=a.image, timeout_s=a.timeout)), "live"


def run(a: HostArgs) -> tuple[Report, dict[str, Any]]:
    raw, source = facts_of(check(a))
    if a.dump_facts:
        outputs.write_one(a.dump_facts, json.dumps(raw, indent=1, default=str) + "\n")
    facts = HostFacts(raw)
    findings = rules.evaluate(rules.Stage.HOST, facts)
    report = Report("host", facts.gpu_name or facts.platform, findings)
    report.context = {
        "platform": "dgx-spark" if facts.is_spark else facts.platform,
        "kernel": facts.kernel,
        "dgx_os": facts.dgx_os,
        "os": facts.os_name,
        "driver": facts.driver_version,
        "module": facts.module_flavour,
        "facts": source,
        "taken_at": raw.get("taken_at"),
        "gather_s": raw.get("gather_s"),
    }
    return report, raw

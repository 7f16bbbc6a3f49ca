"""G2: where flash-attn came from, whether it fits the environment, and Unsloth next to it (pure)."""

from __future__ import annotations

import json
import re

from sparkenv import datafiles
from sparkenv.audit.cuda_binding import Binding
from sparkenv.audit.scan import AuditFacts, DistFacts
from sparkenv.cuda import rules
from sparkenv.report import Finding, Status

_NGC_FA_LABEL = re.compile(r"\+(\d\d\.\d\d)$")
_EXPLAIN = "see `sparkenv explain G2`"


def check(facts: AuditFacts, binds: dict[str, Binding]) -> list[Finding]:
    fa = facts.dists.get("flash-attn")
    unsloth = next(
        (facts.dists[k] for k in datafiles.load("packages")["unsloth_family"] if k in facts.dists), None
    )
    findings: list[Finding] = []
    working = False
    if fa is None:
        findings.append(
            Finding(
                "G2",
                Status.INFO,
                "flash-attn is not installed: attention uses SDPA "
                "(on a bare pip environment, keep it that way)",
                "flash-attn",
            )
        )
    else:
        finding, working = _flash_attn(fa, binds["flash-attn"], facts)
        findings.append(finding)
    if unsloth is not None and working:
        findings.append(_unsloth(unsloth, fa, facts))
    return findings


def origin(df: DistFacts) -> str:
    dist = df.dist
    release = rules.ngc_release(dist.version) or _match(_NGC_FA_LABEL, dist.version)
    if release:
        return f"NGC build {release}"
    if rules.label_cuda_major(dist.version):
        return "prebuilt wheel from the flash-attention GitHub releases"
    direct = _direct_url(df)
    if direct:
        url = direct.get("url", "?")
        if "dir_info" in direct:
            return f"built here from a local source tree ({url})"
        if url.endswith(".whl"):
            return f"wheel from {url}"
        return f"built here from the source archive {url}"
    tags = [
        line.split(":", 1)[1].strip()
        for line in (dist.read_meta("WHEEL") or "").splitlines()
        if line.lower().startswith("tag:")
    ]
    if tags and all(re.search(r"-linux_\w+$", t) for t in tags):
        return f"compiled here from the sdist, wheel tag {tags[0]} (not manylinux)"
    if tags:
        return f"wheel from a package index ({tags[0]})"
    return "unknown origin (no WHEEL file)"


def _flash_attn(df: DistFacts, b: Binding, facts: AuditFacts) -> tuple[Finding, bool]:
    who = f"flash-attn {df.dist.version}"
    where = origin(df)
    target = rules.target_major()
    evidence = [f"origin: {where}", *(f"{so.relpath} ({so.info.machine})" for so in df.shared_objects[:8])]
    wrong_arch = [so for so in df.shared_objects if so.info.machine != facts.target.machine]
    others = sorted(m for m in b.majors if m != target)
    troubles = []
    if df.dist.files_known and not df.shared_objects:
        troubles.append("has no compiled extension (flash_attn_2_cuda*.so missing): the build did not finish")
    if wrong_arch:
        troubles.append(
            f"{len(wrong_arch)} shared object(s) are {wrong_arch[0].info.machine}, the environment is "
            f"{facts.target.machine}"
        )
    if others:
        troubles.append(f"built for CUDA {others[-1]}, target is CUDA {target}")
    if troubles:
        return Finding(
            "G2",
            Status.FAIL,
            f"{who} does not fit: {'; '.join(troubles)}; origin: {where}",
            "flash-attn",
            tuple(evidence),
            "pip uninstall flash-attn and use SDPA, or use the NGC image's flash-attn "
            "(never pip install flash-attn on a Spark: it compiles for an hour)",
        ), False
    if not df.dist.files_known:
        return Finding(
            "G2",
            Status.WARN,
            f"{who}: its files are not listed, fit not checked; origin: {where}",
            "flash-attn",
            tuple(evidence),
            "reinstall it with pip so its RECORD lists the files",
        ), False
    return Finding(
        "G2",
        Status.PASS,
        f"{who}, origin: {where}; {len(df.shared_objects)} shared object(s) fit {facts.target.machine}",
        "flash-attn",
        tuple(evidence),
    ), True


def _unsloth(unsloth: DistFacts, fa: DistFacts | None, facts: AuditFacts) -> Finding:
    who = f"{unsloth.dist.key} {unsloth.dist.version}"
    if facts.sdpa_override:
        return Finding(
            "G2",
            Status.PASS,
            f"{who} next to flash-attn; the SDPA override is installed ({facts.sdpa_override})",
            unsloth.dist.key,
            (f"override: {facts.sdpa_override}",),
        )
    return Finding(
        "G2",
        Status.WARN,
        f"{who} next to a working flash-attn {fa.dist.version if fa else ''} without the SDPA override: "
        'Unsloth picks flash-attn and FastLanguageModel drops attn_implementation="sdpa"',
        unsloth.dist.key,
        (
            "unsloth sets HAS_FLASH_ATTENTION in each of its modules when flash_attn imports",
            f"no {datafiles.load('packages')['sdpa_override_pth']} in the site folders",
        ),
        "if you want SDPA: sparkenv patch sdpa --install (it sets the flag in every Unsloth module, not only "
        f"unsloth.models._utils; {_EXPLAIN}); if flash-attn is what you want, nothing to do",
    )


def _direct_url(df: DistFacts) -> dict | None:
    text = df.dist.read_meta("direct_url.json")
    if not text:
        return None
    try:
        data = json.loads(text)
    except ValueError:
        return None
    return data if isinstance(data, dict) else None


def _match(regex: re.Pattern[str], text: str) -> str | None:
    m = regex.search(text)
    return m.group(1) if m else None

"""`sparkenv audit --fix-plan`: the commands that would fix an environment's CUDA-major findings, each
checked before it is printed.

For each G1 FAIL or WARN about an installed distribution bound to another CUDA major: install its CUDA 13
counterpart where the data names one (rules/counterparts.py), then uninstall it, unless another installed
distribution requires it unconditionally (environment/markers.applies); then the plan names what to
upgrade instead. A requirer the plan itself removes does not hold it.

Each command is dry-run with uv against the environment's interpreter (all installs together, one by one
only if that fails); only commands a dry run accepted are printed, the others with uv's reason. Without
an interpreter or uv, the plan says why and prints no command.
"""

from __future__ import annotations

import shlex
import subprocess
from dataclasses import dataclass, field
from pathlib import Path

from packaging.requirements import InvalidRequirement, Requirement
from packaging.utils import canonicalize_name

from sparkenv.core import children
from sparkenv.core.report import GotchaId, Report, Status
from sparkenv.environment import distributions
from sparkenv.environment.markers import applies, marker_environment
from sparkenv.environment.target import Target
from sparkenv.rules import counterparts

DRY_RUN_TIMEOUT = 120.0


@dataclass
class Plan:
    commands: list[list[str]] = field(default_factory=list)
    not_planned: list[str] = field(default_factory=list)

    def lines(self, where: str) -> list[str]:
        out = [f"fix plan for {where} (each command accepted by a dry run against it):"]
        out += [f"  {shlex.join(c)}" for c in self.commands] or ["  (no command)"]
        if self.not_planned:
            out.append("not planned:")
            out += [f"  {n}" for n in self.not_planned]
        return out

    def as_json(self) -> dict[str, list[str]]:
        return {"commands": [shlex.join(c) for c in self.commands], "not_planned": list(self.not_planned)}


def _installed(target: Target) -> dict[str, distributions.Distribution]:
    found: dict[str, distributions.Distribution] = {}
    for site in target.site_dirs:
        for d in distributions.iter_distributions(Path(site), read_files=False):
            if isinstance(d, distributions.Distribution):
                found.setdefault(d.key, d)
    return found


def _requirers(key: str, installed: dict[str, distributions.Distribution], env: dict[str, str]) -> list[str]:
    """Each installed distribution that requires `key` unconditionally, with the requirement."""
    out = []
    for d in installed.values():
        for raw in d.requires:
            try:
                r = Requirement(raw)
            except InvalidRequirement:
                continue
            if canonicalize_name(r.name) == key and applies(r.marker, env):
                out.append(f"{d.key} {d.version} (Requires-Dist: {raw})")
                break
    return out


def plan(report: Report, target: Target) -> Plan:
    """The checked commands for the report's CUDA-major findings on `target`."""

    out = Plan()
    installed = _installed(target)
    env = marker_environment(target.machine, target.python_version)
    found = {
        f.subject: f
        for f in report.findings
        if f.id is GotchaId.G1 and f.status in (Status.FAIL, Status.WARN) and f.subject in installed
    }
    subjects = sorted(found)
    counterpart = {}
    for key in subjects:
        fam = counterparts.family(key)
        if fam is not None and fam.counterpart:
            counterpart[key] = counterparts.requirement(fam)
        elif not _residue(found[key].fix):  # removed without a replacement only when nothing uses it
            out.not_planned.append(f"{key}: nothing to install instead: {found[key].fix}")
    removing = {k for k in subjects if k in counterpart or _residue(found[k].fix)}
    # a distribution another (kept) one requires stays; keeping it may keep what it requires in turn
    held: dict[str, list[str]] = {}
    changed = True
    while changed:
        changed = False
        for key in sorted(removing):
            by = [r for r in _requirers(key, installed, env) if r.split(" ")[0] not in removing]
            if by:
                held[key] = by
                removing.discard(key)
                changed = True
    for key in sorted(held):
        upgrade = ", ".join(r.split(" ")[0] for r in held[key])
        out.not_planned.append(
            f"pip uninstall {key}: {'; '.join(held[key])} requires it unconditionally — upgrade "
            f"{upgrade} to a release built for CUDA 13 instead (it is kept until then)"
        )
    installs = [(k, counterpart[k]) for k in sorted(removing) if k in counterpart]  # (subject, requirement)
    if target.interpreter is None:
        out.not_planned.insert(0, f"no command is dry-run: {target.description} has no interpreter to name")
        return out
    try:
        from sparkenv.index.uv_binary import uv_binary

        uv = uv_binary()
    except Exception:
        out.not_planned.insert(0, "no command is dry-run: uv is not installed (`pip install uv`)")
        return out
    python = ["--python", str(target.interpreter)]
    install = [uv, "pip", "install", *python]
    accepted: list[tuple[str, str]] = []
    if installs:
        why = _dry_run([*install, "--dry-run", *(r for _, r in installs)])
        if not why:
            accepted = installs
        else:
            for key, req in installs:
                one = _dry_run([*install, "--dry-run", req]) if len(installs) > 1 else why
                if one:
                    out.not_planned.append(f"uv pip install {req} (for {key}): the dry run refused it: {one}")
                else:
                    accepted.append((key, req))
    if accepted:
        out.commands.append(["uv", "pip", "install", *python, *(r for _, r in accepted)])
    refused_for = {k for k, _ in installs} - {k for k, _ in accepted}
    gone = [k for k in subjects if k in removing and k not in refused_for]
    if gone:
        why = _dry_run([uv, "pip", "uninstall", *python, "--dry-run", *gone])
        if why:
            out.not_planned.append(f"uv pip uninstall {' '.join(gone)}: the dry run refused it: {why}")
        else:
            out.commands.append(["uv", "pip", "uninstall", *python, *gone])
    return out


def _residue(fix: str | None) -> bool:
    """The audit's own word that nothing needs it (rules/g1_installed.py: CUDA-major residue)."""
    return bool(fix) and str(fix).startswith("pip uninstall ")


def _dry_run(argv: list[str]) -> str:
    """ "" when uv accepts the command as a dry run; else its last words."""

    try:
        proc = children.spawn(argv, text=True)
    except OSError as exc:
        return str(exc)
    try:
        _, err = proc.communicate(timeout=DRY_RUN_TIMEOUT)
    except subprocess.TimeoutExpired:
        return f"no answer within {DRY_RUN_TIMEOUT:.0f} s"
    finally:
        children.stop(proc)
    if proc.returncode == 0:
        return ""
    words = [ln.strip() for ln in err.splitlines() if ln.strip()]
    return " ".join(words[-3:])[:300] or f"exit status {proc.returncode}"

"""G9: the drift-prone packages (torch, triton, xformers, transformers) against the project's lock (pure)."""

from __future__ import annotations

from sparkenv import datafiles
from sparkenv.audit.scan import AuditFacts
from sparkenv.cuda import rules
from sparkenv.report import Finding, Status


def check(facts: AuditFacts) -> list[Finding]:
    installed = [facts.dists[k] for k in datafiles.load("packages")["drift_prone"] if k in facts.dists]
    if facts.lock is None:
        if not installed:
            return []
        versions = ", ".join(f"{d.dist.key} {d.dist.version}" for d in installed)
        return [
            Finding(
                "G9", Status.INFO, f"no --lock given: {versions} not compared with a lock", "lock", (), None
            )
        ]
    out: list[Finding] = []
    lock = facts.lock
    for df in installed:
        key, version = df.dist.key, df.dist.version
        src = f"lock {lock.path}"
        if key not in lock.pins:
            if rules.ngc_release(version) or facts.ngc.pins.get(key) == version:
                out.append(
                    Finding(
                        "G9",
                        Status.PASS,
                        f"{key} {version} is provided by the NGC base, not the lock",
                        key,
                        (src,),
                    )
                )
            else:
                out.append(
                    Finding(
                        "G9",
                        Status.WARN,
                        f"{key} {version} is installed but not pinned in {lock.path}",
                        key,
                        (src,),
                        f"pin {key}=={version} in the lock (sparkenv lock)",
                    )
                )
            continue
        pinned = lock.pins[key]
        if pinned is None:
            out.append(
                Finding(
                    "G9",
                    Status.WARN,
                    f"{key} {version}: {lock.path} lists it without an exact pin",
                    key,
                    (src,),
                    f"pin {key}=={version} exactly",
                )
            )
        elif pinned != version:
            out.append(
                Finding(
                    "G9",
                    Status.WARN,
                    f"{key} drifted: {lock.path} pins {pinned}, {version} is installed",
                    key,
                    (src,),
                    f"pip install --no-deps '{key}=={pinned}', or re-lock",
                )
            )
        else:
            out.append(Finding("G9", Status.PASS, f"{key} {version} matches {lock.path}", key, (src,)))
    return out

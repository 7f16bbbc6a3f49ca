"""Two invariants of a resolved set, checked on every Requires-Dist that applies on the target.

- The base: a requirement on a package the base provides (torch, triton under its NGC name, flash-attn
  …) must accept the base's exact version, pre-releases included (NGC's torch is `2.10.0a0+….nv25.11`,
  which `torch>=2.10.0` does NOT accept). Otherwise installing it with pip replaces the base's build:
  G9 FAIL, with the chain that asks for it and the ways out.
- Closure: every other requirement is satisfied by a package in the lock. A lock that misses one fails
  at import (`--no-deps` installs nothing else); G9 FAIL naming the package and the requirement.
"""

from __future__ import annotations

from packaging.version import InvalidVersion, Version

from sparkenv.report import Finding, Status
from sparkenv.resolve.graph import Edge, by_target
from sparkenv.resolve.profiles import Profile


def accepts(req_specifier, version: str) -> bool:  # type: ignore[no-untyped-def]
    """PEP 440 containment with pre-releases allowed: the base's version is what it is."""
    try:
        return req_specifier.contains(Version(version), prereleases=True)
    except InvalidVersion:
        return False


def _show(e: Edge) -> str:
    return f"{e.target}{e.req.specifier}" if str(e.req.specifier) else e.target


def base_conflicts(
    versions: dict[str, str],
    graph_edges: list[Edge],
    chain: dict[str, list[str]],
    profile: Profile,
    allow_replace: set[str],
) -> list[Finding]:
    """G9 for requirements on what the base provides, one finding per provided package listing every
    chain that asks for another version. `versions`: locked name -> version."""
    bad: dict[str, list[Edge]] = {}
    unknown: dict[str, list[Edge]] = {}
    for dep, group in by_target(graph_edges):
        provider = profile.provider(dep)
        if provider is None or provider in allow_replace or dep in allow_replace:
            continue
        base_v = profile.provides.get(provider, "")
        for e in group:
            if e.req.url or (base_v and not accepts(e.req.specifier, base_v)):
                bad.setdefault(provider, []).append(e)
            elif not base_v and str(e.req.specifier):
                unknown.setdefault(provider, []).append(e)

    def path(e: Edge) -> str:
        return " → ".join(
            [*chain.get(e.source, [e.source]), f"{e.target} @ {e.req.url}" if e.req.url else _show(e)]
        )

    out: list[Finding] = []
    where = profile.image or profile.name
    for provider, group in sorted(bad.items()):
        base_v = profile.provides.get(provider, "")
        paths = sorted({path(e) for e in group}, key=len)
        sources = sorted({e.source for e in group})
        shown = "; ".join(paths[:4]) + (f"; … ({len(paths) - 4} more)" if len(paths) > 4 else "")
        out.append(
            Finding(
                "G9",
                Status.FAIL,
                f"{shown}: not met by the base's {provider} {base_v} ({where}, pre-releases count); "
                f"installed with pip, {'this replaces' if len(paths) == 1 else 'these replace'} the base's "
                f"{provider}",
                provider,
                (*paths, f"base: {provider} {base_v}"),
                f"pin {'a release' if len(sources) == 1 else 'releases'} of {', '.join(sources)} that "
                f"accept{'s' if len(sources) == 1 else ''} {provider} {base_v}, choose another profile "
                f"(`sparkenv profiles`), or replace the base's {provider} on purpose with --allow-replace "
                f"{provider} (recorded in the lock)",
            )
        )
    for provider, group in sorted(unknown.items()):
        paths = sorted({path(e) for e in group}, key=len)
        out.append(
            Finding(
                "G9",
                Status.WARN,
                f"{'; '.join(paths[:4])}: the base provides {provider} but {profile.path or profile.name} "
                "does not record its version; cannot tell whether it would be replaced",
                provider,
                tuple(paths),
                f"record provides.{provider} in the profile",
            )
        )
    return out


def unclosed(
    versions: dict[str, str],
    graph_edges: list[Edge],
    chain: dict[str, list[str]],
    profile: Profile,
    allow_replace: set[str],
) -> list[Finding]:
    """G9 FAIL for each requirement neither the lock nor the base satisfies."""
    out: list[Finding] = []
    for dep, group in by_target(graph_edges):
        provider = profile.provider(dep)
        if provider is not None and provider not in allow_replace and dep not in allow_replace:
            continue  # judged against the base's version by base_conflicts
        for e in group:
            path = " → ".join(chain.get(e.source, [e.source]))
            src = f"{e.source} {versions.get(e.source, '')}".strip()
            if dep not in versions:
                why = f"{dep} is not in the lock"
            elif e.req.url:
                continue  # a direct reference: uv resolved that very file
            elif not accepts(e.req.specifier, versions[dep]):
                why = f"the lock has {dep} {versions[dep]}"
            else:
                continue
            out.append(
                Finding(
                    "G9",
                    Status.FAIL,
                    f"the lock is not closed: {src} (via {path}) requires {e.req} and {why}; "
                    f"`import {e.source.replace('-', '_')}` can fail",
                    e.source,
                    (f"via {path}", str(e.req)),
                    f"add {_show(e)} to the inputs (or drop {e.source}), then lock again",
                )
            )
    return out


def closed_info(n_packages: int, n_edges: int) -> Finding:
    return Finding(
        "G9",
        Status.PASS,
        f"the resolved set is closed: {n_edges} requirement(s) of {n_packages} package(s), markers evaluated "
        "for the target and extras followed, are all met by the lock or the base",
        "closure",
    )

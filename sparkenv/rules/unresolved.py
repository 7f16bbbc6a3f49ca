"""A requirement uv found no set of versions for (`sparkenv lock`): one FAIL naming it, the cause in one line
and the nearest release with a wheel for the target, so `--json`, SARIF and annotations carry it as a
finding (exit 1), not an error line (exit 2 stays for bad input).

What stops a file from installing on the target (no linux/aarch64 wheel and no sdist) is G1's, "the wheel
does not fit the target". What stops the set from closing (no release in range, conflicts, a name the
index does not serve or refuses) is G9's, the closed lock. A package uv could not build stays G2's.
"""

from __future__ import annotations

from functools import partial
from typing import TYPE_CHECKING

from sparkenv.core.report import Finding, GotchaId, Status

if TYPE_CHECKING:
    from sparkenv.facts.resolved import ResolvedFacts, Unresolved

# uv's reasons (lock/uvdriver.py unresolvable) by the gotcha that owns them
KINDS = {
    "platform": GotchaId.G1,  # no wheel with a platform tag of the target, no sdist
    "abi": GotchaId.G1,  # no wheel for the target's Python ABI or implementation
    "python": GotchaId.G1,  # every release in range requires another Python
    "version": GotchaId.G9,  # no release in the range asked
    "conflict": GotchaId.G9,  # requirements that no release satisfies together
    "not-found": GotchaId.G9,  # the index serves no such project
    "refused": GotchaId.G9,  # the index answered with an HTTP error (credentials, forbidden)
    "unknown": GotchaId.G9,  # uv's words name no one package
}

_WHY = {
    "platform": "no wheel of it fits {target} and it has no sdist",
    "abi": "no wheel of it fits the target's Python ({python}) ABI and it has no sdist",
    "python": "it requires another Python than the target's {python}",
    "version": "no release of it is in the range asked",
    "conflict": "the requirements on it conflict",
    "not-found": "the index serves no project of that name",
    "refused": "the index refused to answer for it",
    "unknown": "no set of versions satisfies the inputs",
}


def findings(facts: ResolvedFacts, gid: GotchaId) -> list[Finding]:
    """The FAIL of each unresolvable requirement that `gid` owns (KINDS)."""
    return [_finding(facts, u) for u in facts.unresolved if KINDS.get(u.kind, GotchaId.G9) is gid]


def keys(facts: ResolvedFacts) -> set[str]:
    """The names the lock was resolved without because uv found no version of them."""
    return {u.key for u in facts.unresolved if u.key}


def _finding(facts: ResolvedFacts, u: Unresolved) -> Finding:
    profile = facts.profile
    make = partial(Finding, KINDS.get(u.kind, GotchaId.G9), Status.FAIL)
    why = _WHY.get(u.kind, _WHY["unknown"]).format(target=profile.python_platform, python=profile.python)
    if not u.key:
        return make(
            summary=f"no set of versions satisfies the inputs for {profile.python_platform}: {u.cause}",
            subject="resolution",
            evidence=(),
            fix="change the requirements uv names in its reasoning above, then lock again",
        )
    chain = facts.chain(u.key)
    name = f"{u.key} {u.tried}".strip()
    wheels_elsewhere = f" (wheels of {u.tried or 'it'} exist for {u.platforms})" if u.platforms else ""
    rest = "; the rest was resolved without it" if facts.locked else ""
    return make(
        summary=f"{name} (via {chain}): {why}{wheels_elsewhere} — uv: {u.cause}{rest}",
        subject=u.key,
        evidence=tuple(x for x in (f"via {chain}", f"wheels for {u.platforms}" if u.platforms else "") if x),
        fix=fix(u, chain, profile.python_platform),
    )


def fix(u: Unresolved, chain: str, target: str) -> str:
    """What to change: the nearest release that has a wheel for the target where the index has one, what
    the index needs where it refused or lacks the name."""
    parent = chain.split(" → ")[0] if " → " in chain else ""
    via = f" (its requirement comes from {parent}: pick a {parent} release that accepts it)" if parent else ""
    if u.kind == "refused":
        return (
            f"give sparkenv the index's credentials (in the index URL or a netrc) or use an index that "
            f"serves {u.key}, then lock again"
        )
    if u.kind == "not-found":
        return f"check the name {u.key}, or add the index that serves it (--extra-index-url), then lock again"
    if u.nearest:
        return f"require {u.key}=={u.nearest}, the nearest release with a wheel for {target}{via}"
    if not u.releases_read:
        return f"choose a {u.key} release that has a wheel for {target} (the index page could not be read)"
    return (
        f"no release of {u.key} on the index has a wheel for {target}: drop it{via}, build it on the Spark, "
        "or use an image that ships it"
    )

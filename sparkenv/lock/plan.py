"""What a lock is made of before uv starts: the index options, the install stages, what the base keeps out
of resolution, the declared requirements' one judgement (check and lock make the same call)."""

from __future__ import annotations

import sys
from typing import TYPE_CHECKING, Any

from sparkenv.core.errors import SparkenvError
from sparkenv.environment import profiles
from sparkenv.lock import inputs as inputs_mod
from sparkenv.lock.uvdriver import IndexOptions, Stage

if TYPE_CHECKING:
    # what judges (the rules, the report) is imported once uv has started: only uv's command is
    # needed before (the report, the policy, the credentials are imported after uv's spawn)
    from sparkenv.core.report import Finding


STAGE_MAIN = "1-packages"


STAGE_UNSLOTH = "2-unsloth"


def index_urls(inp: inputs_mod.Inputs, index: IndexOptions) -> list[str]:
    return [u for u in (index.index_url, *index.extra_index_urls) if u]


def index_options(inp: inputs_mod.Inputs, index_url: str | None, extra: list[str]) -> IndexOptions:
    index = IndexOptions(
        index_url or inp.index_url,
        [*inp.extra_index_urls, *(u for u in extra if u not in inp.extra_index_urls)],
        list(inp.find_links),
    )
    return index


def remember(index: IndexOptions) -> None:
    """uv gets the URLs as given; sparkenv's own requests find their user-info by realm (never written)."""
    from sparkenv.index import credentials

    credentials.remember([index.index_url, *index.extra_index_urls])


def reads_from(index: IndexOptions) -> str | None:
    """The index sparkenv's own requests read (pages, metadata): the one uv resolves against."""
    from sparkenv.index import credentials

    return index.index_url or credentials.default_index()


def judge_declared(
    inp: inputs_mod.Inputs,
    profile: profiles.Profile,
    index: IndexOptions,
    staged: bool,
    offline: bool = False,
    allowed: frozenset[str] = frozenset(),
) -> list[Finding]:
    """The one judgement of declared requirements that check and lock both make."""
    from sparkenv.lock import policy

    return policy.check_declared(
        inp.requirements,
        profile,
        index_urls(inp, index),
        staged=staged,
        offline=offline,
        allow_replace=allowed,
    )


def plan_stages(inp: inputs_mod.Inputs, profile: profiles.Profile) -> tuple[Stage | None, list[Stage]]:
    """One resolution, two install stages.

    Everything is resolved together, the Unsloth family (and any `# sparkenv: no-deps` member) with its
    own requirements, so that the lock is closed: what the family imports is pinned too, at versions the
    family accepts. The family still installs in its own --no-deps stage after the rest."""
    resolve = uv_stage(inp, profile)
    return resolve, install_stages(inp, profile, resolve)


def uv_stage(inp: inputs_mod.Inputs, profile: profiles.Profile) -> Stage | None:
    """What uv resolves (its command needs only this, before it starts): the family's data file is read
    only for a requirement whose markers do not hold on the target."""
    lines = [d.text for d in resolved_requirements(inp, profile.marker_env())]
    if not lines:
        return None
    return Stage(STAGE_MAIN, lines, constraints=[d.text for d in inp.requirements if d.constraint])


def install_stages(inp: inputs_mod.Inputs, profile: profiles.Profile, resolve: Stage | None) -> list[Stage]:
    """The install stages of what uv resolves: a --no-deps stage after the rest when a family member or
    a `# sparkenv: no-deps` member is among its requirements."""
    if resolve is None:
        return []
    fam = family()
    resolved = resolved_requirements(inp, profile.marker_env())
    late = any(d.key in fam or (d.no_deps and d.key is not None) for d in resolved)
    return [Stage(STAGE_MAIN, resolve.lines), *([Stage(STAGE_UNSLOTH, [], no_deps=True)] if late else [])]


def resolved_requirements(inp: inputs_mod.Inputs, env: dict[str, str]) -> list[Any]:
    """The requirements (not constraints) uv resolves: those whose markers hold on the target, and the
    others too unless they install in the --no-deps stage (the family, `no-deps` members)."""
    fam: set[str] | None = None
    out = []
    for d in inp.requirements:
        if d.constraint:
            continue
        if not d.applies(env):
            if d.no_deps:
                continue
            fam = family() if fam is None else fam
            if d.key in fam:
                continue
        out.append(d)
    return out


def family() -> set[str]:
    from sparkenv.rules import unsloth

    return set(unsloth.family())


def late_keys(inp: inputs_mod.Inputs) -> set[str]:
    """Packages installed in the --no-deps stage: the Unsloth family and `# sparkenv: no-deps` members."""
    fam = family()
    return {d.key for d in inp.requirements if d.key and not d.constraint and (d.key in fam or d.no_deps)}


def allowed_keys(names: list[str] | None, profile: profiles.Profile) -> set[str]:
    from packaging.utils import canonicalize_name

    out = set()
    for name in names or []:
        key = canonicalize_name(name)
        provider = profile.provider(key)
        if provider is None:
            raise SparkenvError(
                f"--allow-replace {name}: profile {profile.name} does not provide it "
                f"(it provides {', '.join(profile.provides) or 'nothing'})"
            )
        out |= {key, provider, *(k for k, v in profile.satisfies.items() if v == provider)}
    return out


def excluded_names(profile: profiles.Profile, allowed: set[str]) -> list[str]:
    return [n for n in profile.excluded() if n not in allowed]


def say(progress: bool, line: str) -> None:
    if progress:
        from sparkenv.core.redact import redact

        print(f"sparkenv lock: {redact(line)}", file=sys.stderr, flush=True)

"""What a lock is made of before uv starts: the index options, the install stages, what the base keeps out
of resolution, the declared requirements' one judgement (check and lock make the same call)."""

from __future__ import annotations

import sys
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from sparkenv.core import project
from sparkenv.core.errors import SparkenvError
from sparkenv.environment import profiles
from sparkenv.lock import inputs as inputs_mod
from sparkenv.lock import timeline
from sparkenv.lock import write as lockwrite
from sparkenv.lock.uvdriver import IndexOptions, Stage

if TYPE_CHECKING:
    # what judges (the rules, the report) is imported once uv has started: only uv's command is
    # needed before (the report, the policy, the credentials are imported after uv's spawn)
    from sparkenv.core.report import Finding


@dataclass
class Plan:
    """What the lock is made of before uv starts: the inputs as read, the target, the index options,
    what uv resolves (None: nothing to resolve), what the base keeps out, the lock's two paths."""

    paths: list[str]
    inp: inputs_mod.Inputs
    profile: profiles.Profile
    allowed: set[str]
    index: IndexOptions
    lockable: bool
    stage: Stage | None
    excluded: list[str]
    lock_paths: tuple[Path, Path]
    exclude_newer: str | None


def make(
    paths: list[str],
    profile_arg: str | None,
    platform: str | None,
    output_dir: str | None,
    index_url: str | None,
    extra_index_urls: list[str] | None,
    extras: list[str] | None,
    allow_replace: list[str] | None,
    exclude_newer: str | None,
    groups: list[str] | None,
    inputs: inputs_mod.Inputs | None,
) -> Plan:
    """The plan, in the order uv's command needs it; `inputs`: already read (a fix on trial)."""
    from sparkenv.core import outputs as output_files

    folder = project.lock_folder(output_dir)
    output_files.check_folder(str(folder), "--output-dir")  # before a long resolution
    timeline.mark("lock started")
    inp = inputs if inputs is not None else inputs_mod.read(paths, extras, groups=groups)
    timeline.mark("inputs read")
    profile = inputs_mod.profile_for(profile_arg, platform, inp)
    timeline.mark("profile loaded")
    allowed = allowed_keys(allow_replace, profile)
    index = index_options(inp, index_url, extra_index_urls or [])
    lockable = any(d.key or d.url for d in inp.requirements if not d.constraint)
    stage = uv_stage(inp, profile) if lockable else None
    excluded = excluded_names(profile, allowed)
    lock_paths = lockwrite.paths_for(folder, profile)
    timeline.mark("uv's command known")
    return Plan(paths, inp, profile, allowed, index, lockable, stage, excluded, lock_paths, exclude_newer)


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
    plan: Plan, bind: Callable[[list[Finding]], list[Finding]], expected: bool = False
) -> tuple[list[Finding], bool]:
    """The one judgement of declared requirements that check and lock both make, and whether a FAIL
    among them as the user sees them (`bind`: --select, --ignore, waivers) withholds the lock. The lock
    keeps what it found under the rules' facts and sparkenv itself (lock/judged_cache.py: the rules are
    pure functions of both); one that expects a kept judgement of uv's answer (`expected`) takes the kept
    findings of the same facts rather than judging them again beside uv."""
    from sparkenv.core.report import Status
    from sparkenv.lock import judged_cache, policy

    facts = policy.declared_facts(
        plan.inp.requirements, plan.profile, index_urls(plan.inp, plan.index), staged=True, offline=False,
        allow_replace=frozenset(plan.allowed),
    )  # fmt: skip
    facts_key = judged_cache.key("declared", judged_cache.code_stamp(), facts)
    kept = judged_cache.declared(facts_key) if expected else None
    if kept is not None:
        timeline.mark("declared judgement kept")
        declared = list(kept)
    else:
        declared = policy.judge_declared(facts)
        if judged_cache.keepable(declared):
            judged_cache.keep_declared(facts_key, declared)
    withheld = any(f.status is Status.FAIL for f in bind(declared))
    timeline.mark("declared judged")
    return declared, withheld


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

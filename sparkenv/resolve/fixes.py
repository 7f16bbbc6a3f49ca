"""A fix is tried before it is printed (`sparkenv lock`, when the lock is blocked).

For each FAIL about a distribution, the changes to the inputs that could answer it are proposed as
edits (resolve/fix_edits.py) at the requirement the user wrote — the subject itself when it is declared,
else the root of its chain — from the same knowledge the rules print: the CUDA 13 counterpart
(rules/counterparts.py), the CUDA-major extras (cuda/rules.py extra_major), the nearest release with a
wheel for the target (lock/fallbacks.py). Each is applied to a copy of the inputs and re-resolved by the
lock itself (lock/api.py lock, nothing written): one combined re-resolve of every subject's first
proposal, then, for a subject still failing, one re-resolve per further proposal, within the lock's
deadline and at most MAX_TRIES re-resolves. A fix is printed as one only when its re-resolve leaves no
FAIL on its subject or on what it wrote; else the fix line says what was tried and why it fails."""

from __future__ import annotations

import re
import time
from collections.abc import Callable
from dataclasses import dataclass, field, replace
from typing import TYPE_CHECKING

from packaging.requirements import Requirement
from packaging.utils import canonicalize_name

from sparkenv.core.errors import SparkenvError
from sparkenv.core.report import Finding, Report, Status
from sparkenv.cuda import rules as cuda_rules
from sparkenv.resolve.fix_edits import Edit, on_inputs

if TYPE_CHECKING:
    from sparkenv.environment.profiles import Profile
    from sparkenv.facts.declared import Declared
    from sparkenv.lock.inputs import Inputs

MAX_TRIES = 6  # re-resolves after the blocked lock: the combined one and five single ones
MIN_SECONDS = 5.0  # a re-resolve given less than this is not started
TRIAL_SECONDS = 120.0  # the trials of one lock together, within what is left of the lock's --timeout

# relock(edited inputs, seconds) -> the report and the files it would write (nothing is written)
Relock = Callable[["Inputs", float], "tuple[Report, dict]"]


@dataclass
class Proposal:
    subject: str
    edits: list[Edit]


@dataclass
class Outcome:
    works: Edit | None = None
    tried: list[tuple[Edit, str]] = field(default_factory=list)
    skipped: str = ""  # why nothing was tried (the deadline, the cap)


def _chain_root(f: Finding) -> str | None:
    for text in (*f.evidence, f.summary):
        m = re.search(r"via ([^\s()]+(?: → [^\s()]+)*)", text)
        if m:
            return canonicalize_name(m.group(1).split(" → ")[0].split("[")[0])
    return None


def _roots(inp: Inputs, env: dict[str, str]) -> dict[str, Declared]:
    return {d.key: d for d in inp.requirements if d.key and not d.constraint and not d.url and d.applies(env)}


def _spelled(
    d: Declared, name: str | None = None, extras: set[str] | None = None, spec: str | None = None
) -> str:
    extras = set(d.extras) if extras is None else extras
    body = f"[{','.join(sorted(extras))}]" if extras else ""
    return f"{name or d.key}{body}{str(d.specifier) if spec is None else spec}"


def _target_extra(extra: str, target: int) -> str:
    """The target's spelling of a CUDA-major extra, in the extra's own style: cuda12 -> cuda13, cu12 ->
    cu13, cuda120 -> cuda130, cu126 -> cu130."""

    def swap(m: re.Match[str]) -> str:
        digits = m.group(2)
        return m.group(1) + (str(target) if len(digits) <= 2 else f"{target}0")

    return re.sub(r"(cuda|cu)(\d{2,3})", swap, extra, count=1)


def propose(findings: list[Finding], inp: Inputs, profile: Profile, index_url: str | None) -> list[Proposal]:
    """The edits that could answer each FAIL about a distribution, in the order they are tried."""
    from sparkenv.rules import counterparts

    target = cuda_rules.target_major()
    roots = _roots(inp, profile.marker_env())
    out: dict[str, Proposal] = {}
    for f in findings:
        if f.status is not Status.FAIL or f.subject in out:
            continue
        root_key = f.subject if f.subject in roots else _chain_root(f)
        d = roots.get(root_key or "")
        if d is None:
            continue
        edits: list[Edit] = []
        cuda_extras = [e for e in sorted(d.extras) if cuda_rules.extra_major(e) not in (None, target)]
        if f.subject == d.key:
            fam = counterparts.family(d.key)
            if fam is not None and fam.counterpart:
                why = f"its CUDA {target} counterpart" + (f" ({fam.also})" if fam.also else "")
                edits.append(Edit("replace", d.key, counterparts.requirement(fam), f.subject, why))
            if " — uv: " in f.summary:  # uv found no release of it for the target: the nearest that has one
                nearest = _nearest(d, profile, index_url)
                if nearest:
                    why = f"the nearest release with a wheel for {profile.python_platform}"
                    edits.append(Edit("pin", d.key, _spelled(d, spec=f"=={nearest}"), f.subject, why))
        for e in cuda_extras:
            swapped = (set(d.extras) - {e}) | {_target_extra(e, target)}
            why = f"its CUDA {target} extra in place of [{e}]"
            edits.append(Edit("extra", d.key, _spelled(d, extras=swapped), f.subject, why))
            if len(d.specifier):  # a pinned release may predate the extra
                why += ", at the newest release the rest allows"
                edits.append(Edit("extra", d.key, _spelled(d, extras=swapped, spec=""), f.subject, why))
        if f.subject != d.key and len(d.specifier):
            edits.append(Edit("upgrade", d.key, _spelled(d, spec=""), f.subject))
        for e in cuda_extras:  # last: the build it leaves may run on the CPU only
            why = f"without the extra [{e}] (what it installs then may run on the CPU only)"
            edits.append(Edit("extra", d.key, _spelled(d, extras=set(d.extras) - {e}), f.subject, why))
        if edits:
            out[f.subject] = Proposal(f.subject, _unique(edits))
    return list(out.values())


def _unique(edits: list[Edit]) -> list[Edit]:
    seen: set[str] = set()
    return [e for e in edits if not (e.new in seen or seen.add(e.new))]  # type: ignore[func-returns-value]


def _nearest(d: Declared, profile: Profile, index_url: str | None) -> str:
    """The release of `d` nearest to its pin that has a wheel for the target: the Unresolved finding's
    own answer (lock/fallbacks.py nearest_with_wheel), asked of the same index page."""
    from sparkenv.lock import fallbacks

    releases = fallbacks.every_release(index_url, d.key or "")
    return fallbacks.nearest_with_wheel(releases or {}, profile, d.exact or "") if releases else ""


def _why_not(report: Report, e: Edit, files: dict) -> str:  # type: ignore[type-arg]
    """Why the re-resolve with `e` does not answer its subject ("" when it does)."""
    about = {e.subject, e.key, e.new_key}
    for f in report.sorted_findings():
        if f.status is Status.FAIL and (f.subject in about or f.subject == "resolution"):
            return f"{f.id.value} FAIL: {_short(f.summary)}"
    if e.kind == "extra" and any(cuda_rules.extra_major(x) for x in Requirement(e.new).extras):
        pylock = next((t for p, t in files.items() if p.suffix == ".toml"), "")
        names = re.findall(r'^name = "([^"]+)"', pylock, re.MULTILINE)
        target = cuda_rules.target_major()
        if not any((m := cuda_rules.name_match(n)) and m.major == target for n in names):
            return f"the extra brings no CUDA {target} build into the set ({e.key} may not offer it)"
    return ""


def _short(text: str, limit: int = 220) -> str:
    text = text.split(" — uv: ")[0]
    return text if len(text) <= limit else text[: limit - 1] + "…"


def trial(
    report: Report,
    inp: Inputs,
    propose_for: Callable[[list[Finding], Inputs], list[Proposal]],
    relock: Relock,
    deadline: float,
    say: Callable[[str], None],
) -> dict[str, Outcome]:
    """Each proposal's outcome: the first edit whose re-resolve leaves its subject without a FAIL.

    Rounds: the first edit of every proposal in one combined re-resolve; each subject still failing then
    tried edit by edit (with the edits that work); a FAIL that only the combined re-resolve revealed (a
    declared FAIL stops the lock before uv, hiding what uv would have said) is proposed for in the next
    round, against the inputs with the working edits applied."""
    outcomes: dict[str, Outcome] = {}
    tries = 0
    accepted: list[Edit] = []

    def attempt(edits: list[Edit]) -> tuple[Report | None, dict, str]:  # type: ignore[type-arg]
        nonlocal tries
        left = deadline - time.monotonic()
        if tries >= MAX_TRIES or left < MIN_SECONDS:
            return None, {}, "not tried: " + ("the lock's deadline is near" if left < MIN_SECONDS else
                                              f"at most {MAX_TRIES} re-resolves are tried")  # fmt: skip
        tries += 1
        try:
            got, files = relock(on_inputs(inp, edits), left)
        except SparkenvError as exc:
            return None, {}, f"the re-resolve stopped: {_short(str(exc))}"
        return got, files, ""

    proposals = propose_for(report.findings, inp)
    while proposals:
        for p in proposals:
            outcomes[p.subject] = Outcome()
        first = [p.edits[0] for p in proposals]
        say(f"the lock is blocked: trying {len(first)} fix(es) in one re-resolve …")
        combined, files, stopped = attempt([*accepted, *first])
        for p in proposals:
            e = p.edits[0]
            why = stopped or (_why_not(combined, e, files) if combined is not None else "")
            if why:
                outcomes[p.subject].tried.append((e, why))
            else:
                outcomes[p.subject].works = e
                accepted.append(e)
        for p in proposals:
            _one_by_one(p, outcomes[p.subject], len(proposals) > 1, accepted, attempt, say)
        if combined is None:
            break
        seen = set(outcomes)
        proposals = [
            q for q in propose_for(combined.findings, on_inputs(inp, accepted)) if q.subject not in seen
        ]
    return outcomes


def _one_by_one(
    p: Proposal,
    out: Outcome,
    others: bool,
    accepted: list[Edit],
    attempt: Callable[[list[Edit]], tuple[Report | None, dict, str]],  # type: ignore[type-arg]
    say: Callable[[str], None],
) -> None:
    """A subject the combined re-resolve left failing: its further edits, one re-resolve each. Its first
    edit again alone only where the combined re-resolve failed as a whole (another edit may be why)."""
    if out.works is not None:
        return
    whole = others and any(w.startswith(("the re-resolve stopped", "G9 FAIL: no set")) for _, w in out.tried)
    for e in [*(p.edits[:1] if whole else []), *p.edits[1:]]:
        say(f"trying {e.says} …")
        got, files, stopped = attempt([*accepted, e])
        if stopped.startswith("not tried"):
            out.skipped = stopped
            return
        why = stopped or (_why_not(got, e, files) if got is not None else "")
        out.tried = [t for t in out.tried if t[0] != e]
        if not why:
            out.works = e
            accepted.append(e)
            return
        out.tried.append((e, why))


def works(outcomes: dict[str, Outcome]) -> list[Edit]:
    return [o.works for o in outcomes.values() if o.works is not None]


def annotate(report: Report, outcomes: dict[str, Outcome], platform: str) -> Report:
    """The report with each tried subject's fix replaced by what the trial showed."""
    findings = []
    for f in report.findings:
        out = outcomes.get(f.subject)
        if out is None or f.status is not Status.FAIL:
            findings.append(f)
            continue
        findings.append(replace(f, fix=_fix_line(f, out, platform)))
    return replace(report, findings=findings)


def _fix_line(f: Finding, out: Outcome, platform: str) -> str | None:
    if out.works is not None:
        return (
            f"{out.works.says} — tried: it re-resolves for {platform} with no FAIL left on {f.subject} "
            "(`sparkenv lock --fix` writes it)"
        )
    tried = "; ".join(f"{e.says}: fails because {why}" for e, why in out.tried)
    if not tried:
        return f.fix if not out.skipped else f"{f.fix} ({out.skipped})"
    return f"tried: {tried}" + (f" ({out.skipped})" if out.skipped else "")

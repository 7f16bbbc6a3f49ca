"""G2 — flash-attn: an hour-long source build that looks like a hang, a build that does not fit, or
Unsloth silently dropping attn_implementation="sdpa" for it: every stage's judgement.

declared: flash-attn (and the other CUDA-compiling packages) against the base's build or the target's
wheels (check, lock); resolved: a package that resolves only to an sdist (lock); installed: where
flash-attn came from and whether its shared objects fit, Unsloth next to a working flash-attn without
the SDPA override (audit, build's self-audit); live: flash-attn runs on the GPU, the SDPA override is
active where SDPA is wanted (gate).
"""

from __future__ import annotations

import json
import re
from functools import partial
from typing import TYPE_CHECKING

from sparkenv.core.report import Finding, GotchaId, Status
from sparkenv.cuda import rules
from sparkenv.knowledge import packages
from sparkenv.patches.sdpa import mode_from_env
from sparkenv.rules import Lazy, Rule, Stage, cuda_major, unsloth, wrong_cpu
from sparkenv.rules.cuda_major import Binding
from sparkenv.rules.replaced import replaced_on_purpose

if TYPE_CHECKING:
    from sparkenv.environment.profiles import Profile
    from sparkenv.facts.declared import Declared, DeclaredFacts
    from sparkenv.facts.installed import AuditFacts, DistFacts
    from sparkenv.facts.live import GateFacts
    from sparkenv.facts.override import OverrideFacts
    from sparkenv.facts.resolved import ResolvedFacts, SdistBuild

_finding = partial(Finding, GotchaId.G2)  # every finding of this module is G2's

_NGC_FA_LABEL = re.compile(r"\+(\d\d\.\d\d)$")
_EXPLAIN = "see `sparkenv explain G2`"


# ---------------------------------------------------------------------------------------------------
# Stage.DECLARED and Stage.RESOLVED: a package that compiles CUDA code at install


def declared(facts: DeclaredFacts) -> list[Finding]:
    return replaced_on_purpose(_declared(facts), facts.allow_replace)


def _declared(facts: DeclaredFacts) -> list[Finding]:
    compiles = packages().compiles_cuda
    out: list[Finding] = []
    for d in facts.applicable:
        if d.key in compiles:
            out += _compiled(d, facts.profile, facts.profile.provider(d.key), list(compiles[d.key]))
    return out


def _compiled(d: Declared, profile: Profile, provider: str | None, wheel_cpus: list[str]) -> list[Finding]:
    key = d.key
    assert key is not None
    ev = (d.where,)
    if provider is not None:
        base_v = profile.provides[provider]
        if not d.url and (
            not str(d.specifier) or (base_v and d.specifier.contains(base_v, prereleases=True))
        ):
            return [
                _finding(
                    status=Status.PASS,
                    summary=f"{key} is provided by the base ({provider} "
                    f"{base_v or 'version not recorded'}, {profile.image}); "
                    "excluded from resolution, nothing compiles",
                    subject=key,
                    evidence=ev,
                )
            ]
        return [
            _finding(
                status=Status.FAIL,
                summary=f"{key}{d.specifier or ' @ ' + str(d.url)} ({d.where}) is not the base's "
                f"{provider} {base_v}: "
                "installing it replaces a working build with a from-source CUDA compile (1–1.5 h "
                "that looks like a hang)",
                subject=key,
                evidence=ev,
                fix=f"drop the requirement and use the base's {provider}, or require {key}=={base_v}",
            )
        ]
    if d.url and d.url.endswith(".whl"):
        return []  # a prebuilt wheel: judged by its tags and labels
    if profile.machine in wheel_cpus:
        return [
            _finding(
                status=Status.PASS,
                summary=f"{key} ({d.where}) has upstream wheels for {profile.machine}; the lock verifies "
                "one is chosen",
                subject=key,
                evidence=ev,
            )
        ]
    return [
        _finding(
            status=Status.FAIL,
            summary=f"{key} ({d.where}) has no {profile.machine} wheel upstream: pip compiles its CUDA code "
            f"from the sdist (1–1.5 h that looks like a hang) on {profile.name}",
            subject=key,
            evidence=ev,
            fix=source_fix(key, d.exact or "", profile),
        )
    ]


def source_fix(key: str, version: str, profile: Profile) -> str:
    """What to do about a package that would compile CUDA code at install, fitted to the profile in use:
    another shipped profile only when one provides it, SDPA only for flash-attn."""
    from sparkenv.environment import profiles

    others = sorted(
        name for name, p in profiles.shipped().items() if p.provider(key) and name != profile.name
    )
    ways = []
    if others:
        ways.append(f"use a profile whose base provides it (--profile {others[-1]})")
    if key == "flash-attn":
        ways.append("drop it and use SDPA")
    else:
        ways.append(f"pin a {key} release that has a wheel for {profile.machine}, or drop it")
    pin = f"{key}=={version}" if version else key
    if profile.provider("torch"):
        ways.append(
            f"build it once in your image against the base's torch (pip install --no-build-isolation {pin})"
        )
    return "; ".join(ways)


def _sdist_words(kind: str) -> str:
    return {
        "pure": "a pure-Python build, nothing compiles",
        "optional": "it compiles CUDA only when asked to, not by default",
        "native": "native code that does not build against torch",
        "unknown": "its build files could not be read",
    }.get(kind, "")


def resolved(facts: ResolvedFacts) -> list[Finding]:
    """An sdist-only pick: FAIL when its own build files say it compiles CUDA or C++ against torch (read
    from the sdist; packages.toml's compiles_cuda is a cache of known answers), WARN otherwise."""
    profile = facts.profile
    out: list[Finding] = []
    for key, pkg in sorted(facts.locked.items()):
        if not (pkg.sdist and not pkg.wheels):
            continue
        ev, desc = facts.evidence(key), facts.describe(key)
        build = sdist_build(facts, key)
        if build is not None and build.kind == "cuda":
            out.append(
                _finding(
                    status=Status.FAIL,
                    summary=f"{desc}: only an sdist ({pkg.sdist}) fits {profile.python_platform}; installing "
                    f"it compiles CUDA/C++ against torch ({'; '.join(build.evidence[:2]) or build.via}): "
                    "1–1.5 h that looks like a hang, or a failed build",
                    subject=key,
                    evidence=(*ev, *build.evidence),
                    fix=source_fix(key, pkg.version, profile),
                )
            )
        else:
            what = f": {_sdist_words(build.kind)}" if build is not None and _sdist_words(build.kind) else ""
            out.append(
                _finding(
                    status=Status.WARN,
                    summary=f"{desc}: only an sdist ({pkg.sdist}) fits {profile.python_platform}; it "
                    f"is built at install{what}",
                    subject=key,
                    evidence=(*ev, *(build.evidence if build else ())),
                    fix="prefer a version with a wheel for the target",
                )
            )
    return out + _build_failures(facts)


def sdist_build(facts: ResolvedFacts, key: str) -> SdistBuild | None:
    """What the sdist of `key` builds: read from the sdist at lock, else a known answer (packages.toml's
    compiles_cuda, a cache of what earlier reads found)."""
    from sparkenv.facts.resolved import SdistBuild

    got = facts.sdist_builds.get(key)
    if got is None and key in packages().compiles_cuda:
        return SdistBuild(key, "cuda", ("packages.toml: compiles CUDA at install",), via="packages.toml")
    return got


def _build_failures(facts: ResolvedFacts) -> list[Finding]:
    """A package uv could not build or download while resolving: a FAIL naming it, the first line of the
    real cause and the fix; the rest of the set was resolved without it, so every other finding stands."""

    profile = facts.profile
    out = []
    for bf in facts.build_failures:
        build = sdist_build(facts, bf.key)
        chain = facts.chain(bf.key)
        desc = f"{bf.key} {bf.version}".strip() + f" (via {chain})"
        missing = re.search(r"No module named '([\w.]+)'", bf.cause)
        compiles = build is not None and build.kind == "cuda"
        if bf.index:
            why = f"it is a placeholder whose build downloads the real wheel from {bf.index}"
            fix = (
                f"add `--extra-index-url {bf.index}` to the requirements (the index that serves the real "
                "wheel), then lock again"
            )
        elif compiles:
            why = f"its sdist compiles CUDA/C++ against torch ({'; '.join(build.evidence[:2])})"  # type: ignore[union-attr]
            fix = source_fix(bf.key, bf.version, profile)
        elif missing:
            mod = missing.group(1).split(".")[0]
            why = f"its build imports {mod} without declaring it"
            fix = (
                f"pin a {bf.key} release that has a wheel for {profile.machine}, or build it where {mod} is "
                f"installed (pip install --no-build-isolation {bf.key}=={bf.version})"
            )
        elif bf.action.startswith("download") and "build" not in bf.action:
            why = "a file it needs could not be downloaded"
            fix = (
                "make the file reachable from here (index, proxy), or pin a release whose files are on "
                "the index"
            )
        else:
            why = "its build failed"
            fix = f"pin a {bf.key} release that has a wheel for {profile.machine}, or drop it"
        out.append(
            _finding(
                status=Status.FAIL,
                summary=f"{desc}: uv could not {bf.action} it for {profile.python_platform}: {bf.cause} — "
                f"{why}; the rest was resolved without it",
                subject=bf.key,
                evidence=tuple(
                    x for x in (bf.sdist, f"via {chain}", *(build.evidence if build else ())) if x
                ),
                fix=fix,
            )
        )
    return out


# ---------------------------------------------------------------------------------------------------
# Stage.INSTALLED: an environment read from outside (sparkenv audit)


def installed(facts: AuditFacts) -> list[Finding]:
    binds = cuda_major.bindings(facts)
    fa = facts.dists.get("flash-attn")
    member = unsloth.installed(facts.dists)
    unsloth_dist = facts.dists[member] if member else None
    findings: list[Finding] = []
    working = False
    if fa is None:
        findings.append(
            _finding(
                status=Status.INFO,
                summary="flash-attn is not installed: attention uses SDPA "
                "(on a bare pip environment, keep it that way)",
                subject="flash-attn",
            )
        )
    else:
        finding, working = _flash_attn(fa, binds["flash-attn"], facts)
        findings.append(finding)
    if unsloth_dist is not None and working:
        findings.append(_unsloth(unsloth_dist, fa, facts))
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
    wrong_arch = wrong_cpu.shared_objects(df, facts.target.machine)
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
        return _finding(
            status=Status.FAIL,
            summary=f"{who} does not fit: {'; '.join(troubles)}; origin: {where}",
            subject="flash-attn",
            evidence=tuple(evidence),
            fix="pip uninstall flash-attn and use SDPA, or use the NGC image's flash-attn "
            "(never pip install flash-attn on a Spark: it compiles for an hour)",
        ), False
    if not df.dist.files_known:
        return _finding(
            status=Status.WARN,
            summary=f"{who}: its files are not listed, fit not checked; origin: {where}",
            subject="flash-attn",
            evidence=tuple(evidence),
            fix="reinstall it with pip so its RECORD lists the files",
        ), False
    return _finding(
        status=Status.PASS,
        summary=f"{who}, origin: {where}; {len(df.shared_objects)} shared object(s) fit "
        f"{facts.target.machine}",
        subject="flash-attn",
        evidence=tuple(evidence),
    ), True


def _unsloth(unsloth: DistFacts, fa: DistFacts | None, facts: AuditFacts) -> Finding:
    who = f"{unsloth.dist.key} {unsloth.dist.version}"
    if facts.sdpa_override:
        return _finding(
            status=Status.PASS,
            summary=f"{who} next to flash-attn; the SDPA override is installed ({facts.sdpa_override})",
            subject=unsloth.dist.key,
            evidence=(f"override: {facts.sdpa_override}",),
        )
    return _finding(
        status=Status.WARN,
        summary=f"{who} next to a working flash-attn {fa.dist.version if fa else ''} without the SDPA "
        "override: "
        'Unsloth picks flash-attn and FastLanguageModel drops attn_implementation="sdpa"',
        subject=unsloth.dist.key,
        evidence=(
            "unsloth sets HAS_FLASH_ATTENTION in each of its modules when flash_attn imports",
            f"no {packages().sdpa_override_pth} in the site folders",
        ),
        fix="if you want SDPA: sparkenv patch sdpa --install (it sets the flag in every Unsloth module, not "
        f"only unsloth.models._utils; {_EXPLAIN}); if flash-attn is what you want, nothing to do",
    )


def _direct_url(df: DistFacts) -> dict | None:
    text = df.dist.read_meta("direct_url.json")
    if not text:
        return None
    try:
        data = json.loads(text)
    except (ValueError, RecursionError):  # a stranger's file: damaged, or nested 100,000 deep
        return None
    return data if isinstance(data, dict) else None


def _match(regex: re.Pattern[str], text: str) -> str | None:
    m = regex.search(text)
    return m.group(1) if m else None


# ---------------------------------------------------------------------------------------------------
# Stage.LIVE: the running machine (sparkenv gate)


def live(f: GateFacts) -> list[Finding]:
    flash = f.torch_stages.get("flash")
    out = [_live_flash_attn(flash, "flash-attn" in f.dists, f.deep)]
    member = unsloth.installed(f.dists)
    if member and flash and flash.get("works"):
        out.append(_live_unsloth(f, member))
    return out


def _live_flash_attn(flash: dict | None, installed: bool, deep: bool = True) -> Finding:
    def finding(status: Status, summary: str, fix: str | None = None) -> Finding:
        return _finding(status=status, summary=summary, subject="flash-attn", evidence=(), fix=fix)

    drop = "pip uninstall flash-attn and use SDPA, or use the NGC image's flash-attn"
    if not installed and (flash is None or not flash.get("importable")):
        return finding(Status.PASS, "flash-attn is not installed: attention uses SDPA")
    if flash is None and not deep:
        return finding(
            Status.INFO,
            "flash-attn is installed; the default gate does not call it (--deep runs a flash-attn call on "
            "the GPU; sparkenv audit reads where it came from)",
        )
    if flash is None:
        return finding(Status.SKIP, "flash-attn is installed but was not tried (no GPU or no torch)")
    if not flash.get("importable"):
        return finding(
            Status.FAIL, f"flash-attn is installed but does not import: {flash.get('error')}", drop
        )
    if not flash.get("works"):
        return finding(
            Status.FAIL,
            f"flash-attn {flash.get('version')} imports but fails on the GPU: {flash.get('error')}",
            drop,
        )
    return finding(Status.PASS, f"flash-attn {flash.get('version')} runs on the GPU")


_SHOWN = ("installed", "installed_by", "mode", "dispatch", "leaks", "env", "errors")


def _live_unsloth(f: GateFacts, member: str) -> Finding:
    override = f.torch_stages.get("sdpa_override") or {}
    raw = f.env.get("SPARKENV_SDPA")
    switched_off = mode_from_env(raw) is None
    explicit = bool(raw and raw.strip())
    wanted = not switched_off and (explicit or bool(override.get("installed")))
    who = f"{member} {f.dists[member]}"
    evidence = tuple(f"{k}: {override[k]}" for k in _SHOWN if override.get(k) not in (None, [], ""))
    dispatch = override.get("dispatch")
    if "unsloth_import_error" in f.torch_stages:
        evidence += (f"import unsloth failed: {f.torch_stages['unsloth_import_error']['error']}",)
    if override.get("active"):
        seen = (
            f"; Unsloth's dispatch picks {dispatch}"
            if dispatch
            else " (Unsloth not imported: --import-unsloth checks its dispatch)"
        )
        return _finding(
            status=Status.PASS,
            summary=f"{who}: the SDPA override is active{seen}",
            subject=member,
            evidence=evidence,
        )
    if wanted:
        why = f"Unsloth's dispatch picks {dispatch}" if dispatch else "Unsloth will train with flash-attn"
        return _finding(
            status=Status.FAIL,
            summary=f"{who}: SDPA is wanted but the override is not active: {why}",
            subject=member,
            evidence=evidence,
            fix="install sparkenv's SDPA override (sparkenv patch sdpa --install); keep SPARKENV_SDPA unset "
            "or 1",
        )
    off = " (SPARKENV_SDPA switches the override off)" if switched_off else ""
    return _finding(
        status=Status.INFO,
        summary=f'{who} will use flash-attn (it overrides attn_implementation="sdpa"){off}; for SDPA install '
        "the "
        "override (sparkenv patch sdpa --install)",
        subject=member,
        evidence=evidence,
    )


# ---------------------------------------------------------------------------------------------------
# sparkenv patch sdpa: what the override's state means after an action (install, uninstall, status)


def override_outcome(f: OverrideFacts) -> Finding:
    """`sparkenv patch sdpa` (--install, --uninstall, status): the override's state, judged here and
    called by the patch command directly (patching is an action, not a stage of the registry). Every
    finding is about the .pth file."""
    said = partial(_finding, subject=f.pth)
    if f.action == "install":
        return _installed(f, said)
    if f.action == "uninstall":
        names = ", ".join(p.rsplit("/", 1)[-1] for p in f.removed)
        summary = (
            f"SDPA override removed from {f.site} ({names})"
            if f.removed
            else f"SDPA override was not installed in {f.site}: nothing to remove"
        )
        return said(Status.INFO, summary, evidence=tuple(f"removed {p}" for p in f.removed))
    if not f.present:
        return said(
            Status.INFO, f"SDPA override not installed in {f.site} (sparkenv patch sdpa --install to add it)"
        )
    if not f.module_present:
        pth_name, module_name = f.pth.rsplit("/", 1)[-1], f.module.rsplit("/", 1)[-1]
        return said(
            Status.FAIL,
            f"{pth_name} in {f.site} names {module_name}, which is missing: override off",
            evidence=(f"missing {f.module}",),
            fix=f"sparkenv patch sdpa --install {f.target}",
        )
    if not f.current:
        return said(
            Status.WARN,
            f"SDPA override installed in {f.site}, from another sparkenv version",
            evidence=(f"{f.module} differs from {f.source}",),
            fix=f"sparkenv patch sdpa --install {f.target} to refresh it",
        )
    return said(
        Status.PASS,
        f"SDPA override installed in {f.site}; SPARKENV_SDPA=0 switches it off",
        evidence=(f.pth, f.module),
    )


def _installed(f: OverrideFacts, said: partial[Finding]) -> Finding:
    """Just installed: active in a fresh interpreter of the target, or not, or no interpreter to ask."""
    evidence = (f"wrote {f.module}", f"wrote {f.pth}")
    if f.verified is None:
        pth_name = f.pth.rsplit("/", 1)[-1]
        return said(
            Status.WARN,
            f"SDPA override installed in {f.site}; not verified: no interpreter found for it",
            evidence=evidence,
            fix=f"run that environment's python with SPARKENV_DEBUG=1 and check {pth_name} loads",
        )
    ok, why = f.verified
    if ok:
        return said(
            Status.PASS,
            f"SDPA override installed in {f.site}: {why}; SPARKENV_SDPA=0 switches it off",
            evidence=(*evidence, why),
        )
    return said(
        Status.FAIL,
        f"SDPA override written to {f.site} but not active: {why}",
        evidence=(*evidence, why),
        fix="install it into a site folder of the interpreter that runs the job (sparkenv patch sdpa "
        f"--install <that interpreter>), then sparkenv patch sdpa --uninstall {f.site}",
    )


RULES = (
    Rule(
        Stage.DECLARED,
        declared,
        "flash-attn, xformers and the other CUDA-compiling packages: against the base's build (same "
        "version or not), or whether the target's CPU has upstream wheels",
    ),
    Rule(
        Stage.RESOLVED,
        resolved,
        "resolved packages for which only an sdist fits the target platform, and what each sdist's own "
        "build files (build-system requires, setup.py, CMakeLists.txt) say it compiles; packages uv "
        "could not build or download while resolving, with the build's own error",
    ),
    Rule(
        Stage.INSTALLED,
        installed,
        "flash-attn's origin (NGC build, sdist compiled here, GitHub wheel), its shared objects' CPU and "
        "CUDA major; Unsloth next to a working flash-attn without the SDPA override's .pth",
    ),
    Rule(
        Stage.LIVE,
        live,
        "flash-attn imported and run on the GPU (in the torch probe); with Unsloth, whether the SDPA "
        "override is active and what Unsloth's dispatch picks, SPARKENV_SDPA",
    ),
    Rule(
        Stage.ATTEST,
        Lazy("attest_g2", "attention"),
        "which attention backend the window's kernels ran (the operators they were launched under, "
        "their names: data/kernel_paths.toml) against the one asked for (--attention, SPARKENV_SDPA), "
        "with its share of GPU time",
    ),
)

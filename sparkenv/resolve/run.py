"""`sparkenv check` and `sparkenv lock`: gather inputs, resolve with uv, apply the policy, write the lock."""

from __future__ import annotations

import os
import tempfile
import time
from pathlib import Path
from typing import Any

from packaging.utils import canonicalize_name, parse_sdist_filename, parse_wheel_filename

from sparkenv.errors import SparkenvError
from sparkenv.report import Finding, Report, Status, merge_by_subject
from sparkenv.resolve import inputs as inputs_mod
from sparkenv.resolve import lockfile, policy, profiles
from sparkenv.resolve.uvdriver import DEFAULT_TIMEOUT, IndexOptions, Stage

STAGE_MAIN = "1-packages"
STAGE_UNSLOTH = "2-unsloth"


def _profile(arg: str | None, platform: str | None, inp: inputs_mod.Inputs | None) -> profiles.Profile:
    base_dir = None
    if not arg and inp is not None:
        arg = inp.settings.get("profile") or inp.settings.get("profile-file")
        base_dir = inp.files[0].parent if inp.files else None
    return profiles.load(arg, base_dir).with_platform(platform)


def _index_urls(inp: inputs_mod.Inputs, index: IndexOptions) -> list[str]:
    return [u for u in (index.index_url, *index.extra_index_urls) if u]


def _index(inp: inputs_mod.Inputs, index_url: str | None, extra: list[str]) -> IndexOptions:
    return IndexOptions(
        index_url or inp.index_url,
        [*inp.extra_index_urls, *(u for u in extra if u not in inp.extra_index_urls)],
        list(inp.find_links),
    )


def check(
    paths: list[str],
    profile_arg: str | None,
    platform: str | None,
    extras: list[str] | None = None,
    lock_input: bool = False,
) -> Report:
    started = time.perf_counter()
    inp = inputs_mod.read(paths, extras)
    profile = _profile(profile_arg, platform, inp)
    index = _index(inp, None, [])
    findings = policy.check_declared(inp.requirements, profile, _index_urls(inp, index), staged=lock_input)
    report = Report("check", " ".join(paths), merge_by_subject(findings), profile=profile.name)
    report.context = {
        "python_platform": profile.python_platform,
        "python": profile.python_minor,
        "requirements": len(inp.requirements),
        "seconds": round(time.perf_counter() - started, 3),
    }
    return report


def _stages(inp: inputs_mod.Inputs, profile: profiles.Profile) -> list[Stage]:
    """Regular packages resolved with their dependencies; the Unsloth family pinned --no-deps after."""
    env = profile.marker_env()
    from sparkenv.rules import unsloth as family

    main, unsloth, constraints = [], [], []
    for d in inp.requirements:
        if d.constraint:
            constraints.append(d.text)
        elif (d.key is not None and family.is_member(d.key)) or (d.no_deps and d.key is not None):
            if d.applies(env):
                unsloth.append(d.text)
        else:
            main.append(d.text)
    stages = [Stage(STAGE_MAIN, main, constraints=constraints)] if main else []
    if unsloth:
        stages.append(Stage(STAGE_UNSLOTH, unsloth, no_deps=True, constraints=constraints))
    return stages


def _locked(texts: dict[str, str]) -> tuple[dict[str, policy.Locked], dict[str, dict[str, Any]]]:
    from sparkenv.datafiles import parse_toml

    locked: dict[str, policy.Locked] = {}
    raw: dict[str, dict[str, Any]] = {}
    for stage in (STAGE_MAIN, STAGE_UNSLOTH):
        if stage not in texts:
            continue
        for pkg in parse_toml(texts[stage]).get("packages", []):
            key = canonicalize_name(pkg["name"])
            if key in locked:  # pinned by stage 1 already: one pin per distribution
                continue
            wheels = [w["url"].rsplit("/", 1)[-1] for w in pkg.get("wheels", [])]
            sdist = pkg["sdist"]["url"].rsplit("/", 1)[-1] if "sdist" in pkg else None
            version = str(pkg.get("version") or _file_version(wheels, sdist))
            locked[key] = policy.Locked(key, version, stage, wheels, sdist)
            entry = dict(pkg)
            entry["version"] = version
            entry["tool"] = {"sparkenv": {"stage": stage}}
            raw[key] = entry
    return locked, raw


def _file_version(wheels: list[str], sdist: str | None) -> str:
    if wheels:
        return str(parse_wheel_filename(wheels[0])[1])
    if sdist:
        return str(parse_sdist_filename(sdist)[1])
    return ""


def lock(
    paths: list[str],
    profile_arg: str | None,
    platform: str | None,
    output_dir: str,
    index_url: str | None = None,
    extra_index_urls: list[str] | None = None,
    extras: list[str] | None = None,
    timeout: float = DEFAULT_TIMEOUT,
) -> Report:
    from sparkenv.resolve import metadata, uvdriver

    started = time.perf_counter()
    inp = inputs_mod.read(paths, extras)
    profile = _profile(profile_arg, platform, inp)
    index = _index(inp, index_url, extra_index_urls or [])
    declared = policy.check_declared(inp.requirements, profile, _index_urls(inp, index), staged=True)
    target = f"{' '.join(paths)} → {profile.python_platform}"
    if any(f.status is Status.FAIL for f in declared):
        findings = [
            *declared,
            Finding(
                "G9", Status.INFO, "not resolved and no lock written: the inputs fail the policy", "lock"
            ),
        ]
        return Report("lock", target, merge_by_subject(findings), profile=profile.name)
    stages = _stages(inp, profile)
    if not stages:
        raise SparkenvError(f"{', '.join(paths)}: no requirement to lock")
    with tempfile.TemporaryDirectory(prefix="sparkenv-lock-") as work:
        jobs = uvdriver.prepare(Path(work), profile, index, stages)
        texts = uvdriver.run_all(jobs, timeout)
    locked, raw = _locked(texts)
    wheels = {}
    for key, entry in raw.items():
        if entry.get("wheels"):
            w = entry["wheels"][0]
            wheels[key] = (w["url"], w["hashes"]["sha256"])
    for key, reqs in metadata.requires(wheels).items():
        locked[key].requires = reqs
    roots = [d.key for d in inp.requirements if d.key and not d.constraint]
    no_deps_stage = STAGE_UNSLOTH if any(s.name == STAGE_UNSLOTH for s in stages) else None
    resolved = policy.check_resolved(locked, roots, profile, no_deps_stage)
    findings = [*declared, *resolved]
    pylock_path, req_path = lockfile.paths_for(Path(output_dir), profile)
    blocked = any(f.status is Status.FAIL for f in findings)
    if blocked:
        findings.append(
            Finding(
                "G9", Status.INFO, f"{pylock_path} not written: the resolved set fails the policy", "lock"
            )
        )
    else:
        _write(pylock_path, req_path, profile, inp, index, stages, raw, paths)
        findings.append(
            Finding(
                "G9",
                Status.PASS,
                f"wrote {pylock_path} and {req_path}: {len(locked)} packages, every one pinned with hashes "
                f"({len(stages)} install stage(s))",
                str(pylock_path),
                (str(req_path),),
            )
        )
    report = Report("lock", target, merge_by_subject(findings), profile=profile.name)
    report.context = {
        "python_platform": profile.python_platform,
        "python": profile.python_minor,
        "packages": len(locked),
        "excluded": profile.excluded(),
        "seconds": round(time.perf_counter() - started, 3),
    }
    return report


def _rel(path: Path, out_dir: Path) -> str:
    return os.path.relpath(path.resolve(), out_dir.resolve())


def _write(
    pylock_path: Path,
    req_path: Path,
    profile: profiles.Profile,
    inp: inputs_mod.Inputs,
    index: IndexOptions,
    stages: list[Stage],
    raw: dict[str, dict[str, Any]],
    paths: list[str],
) -> None:
    from packaging.pylock import Pylock, PylockValidationError

    from sparkenv.datafiles import parse_toml

    out_dir = pylock_path.parent
    order = {s.name: i for i, s in enumerate(stages)}
    packages = sorted(raw.values(), key=lambda p: (order[p["tool"]["sparkenv"]["stage"]], p["name"]))
    tool: dict[str, Any] = {
        "format": lockfile.FORMAT,
        "profile": profile.name,
        "profile-hash": lockfile.profile_hash(profile),
        "image": profile.image,
        "digest": profile.digest,
        "platform": profile.platform,
        "python-platform": profile.python_platform,
        "inputs": [_rel(Path(p), out_dir) for p in paths],
        "input-hash": inp.digest(),
        "excluded": profile.excluded(),
        "stages": [s.name for s in stages],
        "no-deps-stages": [s.name for s in stages if s.no_deps],
        "requirements": req_path.name,
    }
    if index.index_url:
        tool["index-url"] = index.index_url
    if index.extra_index_urls:
        tool["extra-index-urls"] = index.extra_index_urls
    env = f"sys_platform == 'linux' and platform_machine == '{profile.machine}'"
    text = lockfile.render_pylock(packages, tool, f"=={profile.python_minor}.*", env)
    try:
        Pylock.from_dict(parse_toml(text))
    except PylockValidationError as exc:  # pragma: no cover - a bug here, not the user's input
        raise SparkenvError(f"refusing to write an invalid PEP 751 lock: {exc}") from None
    base = f"{profile.image}@{profile.digest}" if profile.digest else (profile.image or "no base image")
    header = [
        f"Written by `sparkenv lock` for profile {profile.name} ({base}), {profile.python_platform}, "
        f"Python {profile.python_minor}.",
        f"input-hash: {tool['input-hash']}  inputs: {', '.join(tool['inputs'])}",
        "Every dependency is pinned here; what the base provides is left alone: "
        + (", ".join(profile.excluded()) or "nothing"),
        f"Install: pip install --no-deps --require-hashes -r {req_path.name}",
        "(or one stage at a time, in order, each with --no-deps)",
    ]
    index_lines = []
    if index.index_url:
        index_lines.append(f"--index-url {index.index_url}")
    index_lines += [f"--extra-index-url {u}" for u in index.extra_index_urls]
    req_text = lockfile.render_requirements(
        packages, [(s.name, s.no_deps) for s in stages], header, index_lines
    )
    lockfile.write_pair({pylock_path: text, req_path: req_text})


def lock_check(
    paths: list[str],
    profile_arg: str | None,
    platform: str | None,
    output_dir: str,
    extras: list[str] | None = None,
) -> Report:
    """Is each lock current with its inputs? Offline: compares the recorded input and profile hashes."""
    out_dir = Path(output_dir)
    findings: list[Finding] = []
    profile_name = None
    if paths:
        inp = inputs_mod.read(paths, extras)
        profile = _profile(profile_arg, platform, inp)
        profile_name = profile.name
        pylock_path, _ = lockfile.paths_for(out_dir, profile)
        findings.append(_fresh(pylock_path, inp.digest(), profile, [_rel(Path(p), out_dir) for p in paths]))
    else:
        locks = sorted(out_dir.glob("pylock.*.toml"))
        if not locks:
            raise SparkenvError(f"{output_dir}: no pylock.*.toml to check")
        for pylock_path in locks:
            tool = lockfile.read_tool(pylock_path)
            recorded = [str(p) for p in tool.get("inputs", [])]
            missing = [p for p in recorded if not (out_dir / p).is_file()]
            if missing:
                findings.append(
                    Finding(
                        "G9",
                        Status.FAIL,
                        f"{pylock_path} records input {missing[0]}, which no longer exists",
                        str(pylock_path),
                        (),
                        "run sparkenv lock again with the current inputs",
                    )
                )
                continue
            inp = inputs_mod.read([str(out_dir / p) for p in recorded])
            prof = profiles.load(str(tool.get("profile")), out_dir).with_platform(str(tool.get("platform")))
            findings.append(_fresh(pylock_path, inp.digest(), prof, recorded))
    return Report("lock --check", str(out_dir), merge_by_subject(findings), profile=profile_name)


def _fresh(pylock_path: Path, digest: str, profile: profiles.Profile, inputs: list[str]) -> Finding:
    subject = str(pylock_path)
    regen = f"sparkenv lock {' '.join(inputs)} --profile {profile.name} --output-dir {pylock_path.parent}"
    if not pylock_path.is_file():
        return Finding("G9", Status.FAIL, f"{pylock_path} does not exist", subject, (), f"run {regen}")
    tool = lockfile.read_tool(pylock_path)
    req = pylock_path.parent / str(tool.get("requirements", ""))
    problems = []
    if tool.get("input-hash") != digest:
        problems.append(f"inputs changed since the lock ({', '.join(inputs)})")
    if tool.get("profile-hash") != lockfile.profile_hash(profile):
        problems.append(f"profile {profile.name} changed since the lock")
    if tool.get("format") != lockfile.FORMAT:
        problems.append("written by another sparkenv lock format")
    if not req.is_file():
        problems.append(f"{req} is missing")
    if problems:
        return Finding(
            "G9", Status.FAIL, f"{pylock_path} is stale: {'; '.join(problems)}", subject, (), f"run {regen}"
        )
    return Finding(
        "G9",
        Status.PASS,
        f"{pylock_path} is current with {', '.join(inputs)} ({profile.name})",
        subject,
        (digest,),
    )

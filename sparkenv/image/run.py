"""`sparkenv build`, behind its command line: lock (optionally), render, build, verify, tag.

The CLI (image/commands.py) only parses options and prints; this module does the work and returns the
image's audit as a report of command "build", so build has the same reporting options as every other
command (sparkenv.render.options). The image is tagged only when that report as shown (--select/--ignore
and the waivers applied) exits 0: no FAIL (and under --strict no WARN or ERROR either).
"""

from __future__ import annotations

import os
import sys
import time
from dataclasses import dataclass, field, replace
from pathlib import Path

from sparkenv.core import project
from sparkenv.core.report import Finding, GotchaId, Report, Status
from sparkenv.render.emit import Shown, shown
from sparkenv.render.options import ReportOptions


@dataclass(frozen=True)
class BuildRequest:
    inputs: tuple[str, ...] = ()
    profile: str | None = None
    lock: str | None = None
    tag: str | None = None
    push: str | None = None  # --push REGISTRY/NAME[:TAG]: pushed after tagging, digest printed
    base: str | None = None
    platform: str | None = None
    ca_bundle: str | None = None
    sdpa: bool = False
    network: str | None = None
    output_dir: str | None = None  # None: the project root's lockfiles/
    no_cache: bool = False
    dry_run: bool = False
    # the tag follows the exit code of the report as shown
    reporting: ReportOptions = field(default_factory=ReportOptions)
    gpu: str | None = None  # --gpu: what the image's extensions must run on (G7), default the GB10
    driver: str | None = None  # --driver: the host driver the image will run on (G1 WARN when too old)


@dataclass
class BuildOutcome:
    # the image's audit ("build") as shown, or the lock's report when locking failed
    report: Shown | Report | None = None
    message: str = ""  # what happened to the tag: one line, shown beside the report
    dry_run: str = ""  # the Dockerfile and the context's files, for --dry-run
    code: int = 0
    notes: list[str] = field(default_factory=list)
    pinned: str = ""  # REGISTRY/NAME@sha256:… after --push
    failed: bool = False  # `message` is the error of a failed step (stderr), the report its findings


def _err(line: str) -> None:
    print(line, file=sys.stderr, flush=True)


def findings_of(audit: dict) -> list[Finding]:
    """The findings of a sparkenv.core.report/1 JSON report (the image's own audit)."""
    out = []
    for f in audit.get("findings") or []:
        out.append(
            Finding(
                id=f["id"],
                status=Status(f["status"]),
                summary=f["summary"],
                subject=f["subject"],
                evidence=tuple(f.get("evidence") or ()),
                fix=f.get("fix"),
            )
        )
    return out


def build(req: BuildRequest) -> BuildOutcome:
    req.reporting.check()
    from sparkenv.environment import profiles
    from sparkenv.image import base_probe, context, engine, runtime
    from sparkenv.render.emit import write_atomic

    started = time.perf_counter()
    _check_names(req)
    lock_path, failed = _lock_path(req)
    if failed is not None:
        return failed
    from sparkenv.lock import read as lockread

    locked = lockread.sparkenv_lock(lock_path)
    prof = context.profile_for(locked, req.profile)
    platform, machine = _platform(req, locked, prof)
    from sparkenv.image.target import driver_check, target_gpu

    gpu_text = target_gpu(req.gpu, prof)
    driver = driver_check(req.driver, prof)  # a finding of the build's report
    from sparkenv.rules import data_age

    # the profile's UNVERIFIED values and a base newer than the data: said once, first, as check says them
    driver_findings = [*([driver] if driver else []), *data_age.profile(GotchaId.G9, prof)]
    ca_path = _ca_bundle(req.ca_bundle)
    ref = req.tag or req.push or f"sparkenv/{prof.file_stem}:latest"
    base = context.default_base(prof, req.base)

    if req.dry_run:  # sparkenv's runtime for the profile's Python (a build reads the base's)
        target = runtime.Target(prof.python_minor, machine, prof.glibc or "2.17")
        wheels, note = _dry_run_runtime(target)
        base, unread = _dry_run_base(base, prof, req.base)
        plan = context.Plan(prof, locked, base, _version(), ca_path, req.sdpa, wheels)
        return BuildOutcome(dry_run=_dry_run(plan, driver_findings, ref, gpu_text, req.push) + unread + note)

    from sparkenv.core import signals

    client = engine.connect()
    signals.on_interrupt(f"no tag moved ({ref})")  # said if Ctrl-C/SIGTERM/SIGHUP stops the build
    docker_platform = profiles.DOCKER_SPELLING[machine]
    # the base first, before any step: is it what the lock was made for? (its python3 answers a probe)
    read = base_probe.read(
        client,
        _resolve_base(client, base, prof, req.base, True).ref,
        docker_platform,
        otherwise="pass --base IMAGE",
    )
    _refuse_another_base(read, prof, machine, locked)
    base = settled_base(client, base, prof, req.base, req.reporting.quiet)
    # sparkenv's runtime for the interpreter the image really has
    target = runtime.Target(read.python_minor, machine, read.glibc or prof.glibc or "2.17")
    wheels = [runtime.sparkenv_wheel(), *runtime.dependency_wheels(target)]
    plan = context.Plan(prof, locked, base, _version(), ca_path, req.sdpa, wheels)
    progress = engine.Progress(req.reporting.quiet)
    if not req.reporting.quiet:
        _err(f"sparkenv build: {prof.name} + {locked.file.name} on {plan.base.ref}")
    try:
        secrets = plan.secrets()
        if secrets:  # an index's credential: BuildKit mounts it, writes it nowhere (image/buildkit.py)
            from sparkenv.image import buildkit

            image_id = buildkit.build(
                context.tar(plan.files()), secrets, docker_platform, req.no_cache, req.network, progress
            )
        else:
            image_id = engine.build(
                client, context.tar(plan.files()), docker_platform, req.no_cache, req.network, progress
            )
    except engine.BuildFailed as exc:
        if not exc.findings:
            raise
        return _failed_step(exc, ref, prof.name, driver_findings, req.reporting)
    arch = engine.architecture(client, image_id)
    wanted = context.ARCH[machine]
    if arch != wanted:
        raise engine.BuildFailed(
            f"the image is {arch}, not {wanted} ({platform}): the engine ignored the platform; build on a "
            f"{wanted} machine (or with binfmt/qemu for {wanted}); nothing was tagged"
        )
    checked = engine.verify(client, image_id, gpu=gpu_text)
    # the image's audit report is written after the last step that can fail (tag, push): a failed
    # push must not leave a new report beside an old tag
    short = image_id.removeprefix("sha256:")[:12]
    took = time.perf_counter() - started
    if checked.report is None or checked.exit_code not in (0, 1):
        last = (checked.stderr.strip().splitlines() or ["no output"])[-1]
        raise engine.BuildFailed(
            f"the image's audit did not run (exit {checked.exit_code}: {last}); image {short} left untagged"
        )
    # the image must start as users start it: through its entrypoint (the gate, then the base's own)
    refused = engine.start_once(client, image_id)
    if refused is not None:
        entry, _ = plan.base.chain()
        raise engine.BuildFailed(
            f"the image does not start through its entrypoint {' '.join(entry)} ({refused}); image {short} "
            "left untagged"
        )
    report = Report("build", ref, [*driver_findings, *findings_of(checked.report)], profile=prof.name)
    view = shown(report, req.reporting)  # --select/--ignore and the waivers: the tag follows what is shown
    report = view.report
    report.context = {
        **report.context,
        "image": short,
        "tag": ref,
        "architecture": arch,
        "steps": progress.total,
        "cached": progress.cached,
        "audit_report": str(context.report_path(locked)),
        "seconds": round(took, 1),
    }
    code = report.exit_code(req.reporting.strict)
    if code:
        report.context["tagged"] = False
        write_atomic(str(context.report_path(locked)), checked.raw)  # why it was not tagged
        return BuildOutcome(
            view,
            f"sparkenv build: image {short} NOT tagged {ref}: its audit found "
            f"{_why(report, req.reporting.strict)} (report: {context.report_path(locked)})",
            code=code,
        )
    # what the registry name pointed at before: a failed push puts it back (or removes the new tag)
    before_push = _image_id(client, req.push) if req.push else None
    engine.tag(client, image_id, ref)
    signals.forget(f"no tag moved ({ref})")
    report.context["tagged"] = True
    message = (
        f"sparkenv build: tagged {ref} (image {short}, {arch}; {progress.total} steps, {progress.cached} "
        f"cached; audit: {report.verdict.value}, report {context.report_path(locked)}; {took:.1f} s)"
    )
    pinned = ""
    if req.push:
        pinned = _push(client, image_id, req.push, before_push, req.reporting.quiet)
        message += f"\nsparkenv build: pushed {req.push}; on every node: docker pull {pinned}"
    write_atomic(str(context.report_path(locked)), checked.raw)
    return BuildOutcome(view, message, pinned=pinned)


def _failed_step(exc, ref: str, profile: str, driver_findings: list[Finding], reporting: ReportOptions):  # type: ignore[no-untyped-def]
    """A step that printed facts (the base check) failed: its findings are the build's report, rendered
    as every report is (--format, --report, --junit …), and the error stays one line."""
    report = Report("build", ref, [*driver_findings, *exc.findings], profile=profile)
    view = shown(report, reporting)
    view.report.context = {**view.report.context, "tag": ref, "tagged": False, "failed": str(exc)}
    return BuildOutcome(view, f"sparkenv build: {exc}; nothing was tagged ({ref})", code=1, failed=True)


def _check_names(req: BuildRequest) -> None:
    """--tag and --push against Docker's reference grammar, before any work (--dry-run too): a bad name
    must not cost a whole build."""
    from sparkenv.core.image_reference import check_tag

    if req.tag is not None:
        check_tag(req.tag)
    if req.push is not None:
        check_tag(req.push, "--push")


def _lock_path(req: BuildRequest) -> tuple[Path, BuildOutcome | None]:
    """The lock to build: --lock, INPUT files locked first (a FAIL there builds nothing), or the
    profile's shipped lock."""
    from sparkenv.core.errors import SparkenvError

    if req.inputs and req.lock:
        raise SparkenvError("give either --lock FILE or INPUT files to lock, not both")
    if req.lock:
        return Path(req.lock), None
    if not req.inputs:
        from sparkenv.lock.api import named_profile, profile_for
        from sparkenv.lock.present import default_lock

        # --profile, else the project's, else the default's lock (else the one lock there)
        stem = profile_for(req.profile, None, None).file_stem
        folder = project.lock_folder(None)
        if named_profile(req.profile, None)[0]:
            return folder / f"pylock.{stem}.toml", None
        return default_lock(folder, stem), None
    from sparkenv.lock import api

    result = api.lock(
        paths=list(req.inputs), profile_arg=req.profile, platform=None, output_dir=req.output_dir
    )
    if result.exit_code():
        return Path(), BuildOutcome(result, "sparkenv build: the lock has a FAIL: nothing was built", code=1)
    # the lock is named by the profile name (a profile file's too): pylock.<name with dots as dashes>.toml
    folder = project.lock_folder(req.output_dir)
    return folder / f"pylock.{str(result.profile).replace('.', '-')}.toml", None


def _platform(req: BuildRequest, locked, prof) -> tuple[str, str]:  # type: ignore[no-untyped-def]
    """(platform, machine): --platform, else the lock's, else the profile's; a bad value names where it
    came from (the option or the lock)."""
    from sparkenv.core.errors import SparkenvError
    from sparkenv.environment import profiles

    source = "--platform" if req.platform else f"{locked.path}: [tool.sparkenv] platform ="
    platform = req.platform or locked.platform or prof.platform
    if platform not in profiles.PLATFORMS:
        raise SparkenvError(f"{source} {platform!r}: not one of {', '.join(sorted(profiles.PLATFORMS))}")
    platform = profiles.canonical_platform(platform)
    return platform, profiles.PLATFORMS[platform]


def _ca_bundle(named: str | None) -> Path | None:
    """--ca-bundle, else $PIP_CERT or $SSL_CERT_FILE when it is a file; a named one that is not usable is
    an error saying what it really is (missing, a FIFO, a folder …)."""
    from sparkenv.core.errors import SparkenvError

    ca = named or os.environ.get("PIP_CERT") or os.environ.get("SSL_CERT_FILE")
    ca_path = Path(ca) if ca else None
    if ca_path is None or ca_path.is_file():
        return ca_path
    if named:
        from sparkenv.core import safe_read

        try:
            safe_read.require_regular(ca_path, what="a CA bundle (PEM)")
        except safe_read.UnreadableFile as exc:
            raise SparkenvError(f"{named}: not a usable CA bundle: {exc.reason}") from None
    return None


def _dry_run(plan, driver_findings: list[Finding], ref: str, gpu_text: str, push: str | None) -> str:  # type: ignore[no-untyped-def]
    """What --dry-run prints: the driver finding, the rendered Dockerfile and the build context."""
    from sparkenv.render.text import finding_line

    files = plan.files()
    lines = [finding_line(f) for f in driver_findings]
    lines += [files["Dockerfile"][0].decode().rstrip("\n"), f"# context ({len(files)} files):"]
    lines += [f"#   {name} ({len(data)} bytes)" for name, (data, _) in sorted(files.items())]
    lines.append(f"# would tag {ref} after `sparkenv audit --json --gpu {gpu_text}` in the image has no FAIL")
    if push:
        lines.append(f"# then push {push} and print its digest")
    return "\n".join(lines) + "\n"


def _dry_run_runtime(target) -> tuple[list[Path], str]:  # type: ignore[no-untyped-def]
    """sparkenv's wheel and its runtime's for --dry-run; without uv (the light install) the runtime's are
    left out and a line says so: the preview needs no extra."""
    from sparkenv.core.errors import ServiceMissing
    from sparkenv.image import runtime

    try:
        runtime.uv()
    except ServiceMissing as exc:
        return [runtime.sparkenv_wheel()], f"# its runtime's wheels left out: {exc}\n"
    return [runtime.sparkenv_wheel(), *runtime.dependency_wheels(target)], ""


def _why(report: Report, strict: bool) -> str:
    if strict and not report.count(Status.FAIL):
        return f"{report.count(Status.WARN)} WARN and {report.count(Status.ERROR)} ERROR (--strict)"
    return f"{report.count(Status.FAIL)} FAIL"


def _image_id(client, ref: str) -> str | None:  # type: ignore[no-untyped-def]
    from sparkenv.image import engine

    found = engine.local_image(client, ref)
    return str(found.id) if found is not None else None


def _push(client, image_id: str, push: str, before: str | None, quiet: bool) -> str:  # type: ignore[no-untyped-def]
    """Tag `push` (the build's own tag when no --tag was given), push it, and return it pinned by digest.
    A failed or stopped push leaves the registry name as it was: a tag for an image the registry does
    not hold would be pushed by hand later without the audit's digest (`before`: the image it named)."""
    from sparkenv.core import signals
    from sparkenv.image import engine
    from sparkenv.image import push as pushing

    engine.tag(client, image_id, push)
    signals.on_interrupt(f"push of {push} stopped: the registry holds no manifest for it")
    try:
        digest = pushing.push(client, push, quiet)
    except BaseException:
        if before is None:
            engine.untag(client, push)
        elif before != image_id:
            engine.retag(client, before, push)
        raise
    signals.forget(f"push of {push} stopped: the registry holds no manifest for it")
    return f"{pushing.split(push)[0]}@{digest}"


def _version() -> str:
    from importlib import metadata

    try:
        return metadata.version("sparkenv")
    except metadata.PackageNotFoundError:
        return "0+unknown"


def settled_base(client, base, prof, override: str | None, quiet: bool = True):  # type: ignore[no-untyped-def]
    """The base as the Dockerfile names it (FROM, the digest labels) and the ENTRYPOINT and CMD the
    image chains to, read from the base's configuration on the engine: the one function the build and
    --dry-run both call, so the dry run prints the build's Dockerfile and labels. The base as the
    profile names it when it is not on the engine (the build pulls it first)."""
    from sparkenv.image import engine

    settled = _resolve_base(client, base, prof, override, quiet)
    img = engine.local_image(client, settled.ref)
    if img is None:
        return settled
    config = img.attrs.get("Config") or {}
    return replace(
        settled,
        entrypoint=tuple(str(x) for x in config.get("Entrypoint") or ()),
        cmd=tuple(str(x) for x in config.get("Cmd") or ()),
    )


def _dry_run_base(base, prof, override: str | None):  # type: ignore[no-untyped-def]
    """The dry run's base: settled as the build settles it where an engine answers and has the base;
    else the profile's, and a line saying what the build will read that the dry run could not."""
    from sparkenv.core.errors import ServiceMissing
    from sparkenv.image import engine

    try:
        client = engine.connect(timeout=10)
    except ServiceMissing:
        return (
            base,
            "# no Docker engine here: the build reads the base's ENTRYPOINT, CMD and digest from it\n",
        )
    settled = settled_base(client, base, prof, override)
    if settled.entrypoint is None:
        return (
            settled,
            f"# {settled.ref} is not on the engine: the build reads its ENTRYPOINT and CMD after the pull\n",
        )
    return settled, ""


def _resolve_base(client, base, prof, override: str | None, quiet: bool):  # type: ignore[no-untyped-def]
    """FROM by digest when the profile's digest is what is here; record the digest actually used."""
    from sparkenv.image import context, engine

    if override:
        img = engine.local_image(client, override)
        if img is None:
            return base
        digests = img.attrs.get("RepoDigests") or []
        return context.Base(override, digests[0].split("@", 1)[1] if digests else img.id, override)
    img = engine.local_image(client, prof.image)
    if img is None:
        return base
    digests = [d.split("@", 1)[1] for d in img.attrs.get("RepoDigests") or [] if "@" in d]
    if prof.digest and prof.digest in digests:
        return base
    used = digests[0] if digests else img.id
    if not quiet and digests:
        _err(
            f"sparkenv build: note: local {prof.image} is {used[:19]}…, not the profile's "
            f"{prof.digest[:19] or 'unrecorded digest'}…; building on the local image (refresh the profile)"
        )
    elif not quiet:  # built or imported here: no registry digest exists to record in a profile
        _err(
            f"sparkenv build: note: {prof.image} is a local image (no registry digest): recorded by its "
            f"image ID {used[:19]}…"
        )
    return context.Base(f"{prof.image}@{used}" if digests else prof.image, used, prof.image)


def _refuse_another_base(read, prof, machine: str, locked) -> None:  # type: ignore[no-untyped-def]
    """The base against the lock's profile (rules/base_fit.py): a difference stops the build before its
    first step, in one line naming both sides and the commands that make a lock for this base."""
    from sparkenv.core.errors import SparkenvError
    from sparkenv.rules.base_fit import differences

    found = differences(read, prof, machine)
    if not found:
        return
    shown = ", ".join(d.describe() for d in found[:6])
    if len(found) > 6:
        shown += f" and {len(found) - 6} more"
    raise SparkenvError(
        f"the base {read.image} is not what {project.from_here(locked.file)} was locked for (profile "
        f"{prof.name}): {shown}; make a profile of this base and lock for it: {_relock(read, locked)}"
    )


def _relock(read, locked) -> str:  # type: ignore[no-untyped-def]
    """The commands, as typed from the working folder: a profile of the base, a lock for it, the build."""
    import re
    import shlex

    stem = read.image.split("@", 1)[0].rsplit("/", 1)[-1].replace(":", "-").lower()
    name = re.sub(r"[^a-z0-9._-]+", "-", stem).strip("-.") or "base"
    folder = locked.file.parent
    inputs = [shlex.quote(project.from_here(folder / p)) for p in locked.inputs] or ["INPUT…"]
    out = shlex.quote(project.from_here(folder))
    new_lock = shlex.quote(project.from_here(folder / f"pylock.{name.replace('.', '-')}.toml"))
    # the indexes the lock was resolved from (recorded without credentials): the same packages again
    indexes = [f"--index-url {shlex.quote(locked.index_url)}"] if locked.index_url else []
    indexes += [f"--extra-index-url {shlex.quote(u)}" for u in locked.extra_index_urls]
    lock = " ".join([*inputs, "--profile", f"{name}.toml", *indexes, "--output-dir", out])
    return (
        f"sparkenv profiles new {name} --from-image {shlex.quote(read.image)} -o {name}.toml && "
        f"sparkenv lock {lock} && sparkenv build --lock {new_lock}"
    )

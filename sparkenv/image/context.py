"""What `sparkenv build` sends to the engine: the Dockerfile rendered from dockerfiles/ (package data) and
the context files (lock stages, sparkenv's runtime, the base check, an optional CA bundle). No Docker
needed here."""

from __future__ import annotations

import io
import json
import re
import tarfile
from dataclasses import dataclass, field
from importlib import resources
from pathlib import Path

from sparkenv.core import safe_read
from sparkenv.core.errors import SparkenvError
from sparkenv.core.image_reference import check_image
from sparkenv.core.redact import redact
from sparkenv.environment import profiles
from sparkenv.environment.profiles import Profile
from sparkenv.facts.lock import Lock
from sparkenv.image import buildkit, runtime
from sparkenv.index import credentials
from sparkenv.lock import profile as lockprofile
from sparkenv.lock import write as lockwrite

TEMPLATE = "ngc.Dockerfile"
PIP = "python3 -m pip"
PIP_FLAGS = "--no-cache-dir --disable-pip-version-check --no-input"
# A base whose python3 is externally managed (PEP 668: Debian's and Ubuntu's) refuses pip's installs; the
# image is the environment, so its installs use the base's own override, as NGC's images set it. What
# PEP 668 protects, the base's packages, the build's base check guards more narrowly (a replaced one
# fails the build). An older pip ignores the variable.
BREAK = "PIP_BREAK_SYSTEM_PACKAGES=1"
ARCH = {"aarch64": "arm64", "x86_64": "amd64"}


def stage_file(stage: str) -> str:
    """The build context's requirements file of one lock stage."""
    return f"requirements.{stage}.txt"


def report_path(lock: Lock) -> Path:
    """Where the image's own audit report is kept: next to the lock."""
    return lock.file.with_name(f"image-audit.{lock.stem}.json")


def template_text(name: str) -> str:
    """A Dockerfile template, as package data: sparkenv/dockerfiles/ is the checkout's dockerfiles/ (a
    symlink, one copy) and ships in the wheel, so an installed sparkenv builds too."""
    try:
        return resources.files("sparkenv").joinpath("dockerfiles", name).read_text(encoding="utf-8")
    except OSError as exc:
        raise SparkenvError(
            f"sparkenv/dockerfiles/{name}: the Dockerfile template is missing from this sparkenv "
            f"({exc.strerror}): reinstall it (pip install --force-reinstall sparkenv)"
        ) from None


def profile_for(lock: Lock, arg: str | None) -> Profile:
    """--profile as the user gave it (a file relative to the working directory, like every path on the
    command line), else the profile the lock records (sparkenv.lock.profile). A profile whose content
    changed since the lock is refused: the lock was resolved for what it said then."""

    prof = profiles.load(arg) if arg else lockprofile.of_lock(lock)
    named = lock.profile
    if named and not named.endswith(".toml") and prof.name != named:
        raise SparkenvError(
            f"{lock.path}: locked for profile {named}, not {prof.name}: re-lock or drop --profile"
        )
    if lockprofile.changed(lock, prof):
        shown = prof.file or prof.name
        raise SparkenvError(
            f"{lock.path}: profile {shown} changed since the lock was written: re-lock "
            f"(sparkenv lock INPUT… --profile {shown}), then build"
        )
    return prof


@dataclass(frozen=True)
class Base:
    ref: str  # what FROM names
    digest: str  # recorded in the labels ("" when unknown)
    name: str  # the image name without digest, for the OCI base.name label
    # the base's own ENTRYPOINT and CMD, read from its configuration; None: not read (the base is not
    # here before the build pulls it): NGC's entrypoint for an NGC image, none otherwise
    entrypoint: tuple[str, ...] | None = None
    cmd: tuple[str, ...] | None = None

    def chain(self) -> tuple[list[str], list[str]]:
        """(ENTRYPOINT, CMD) of the sparkenv image: the gate, then the base's own entrypoint, whose CMD
        stays the default command (an image's ENTRYPOINT resets the CMD it inherits: set again)."""
        entry = self.entrypoint
        if entry is None:
            entry = (NGC_ENTRYPOINT,) if self.name.startswith(NGC_IMAGES) else ()
        return ["/usr/local/bin/sparkenv", "gate", "--", *entry], list(self.cmd or ())


NGC_ENTRYPOINT = "/opt/nvidia/nvidia_entrypoint.sh"
NGC_IMAGES = "nvcr.io/nvidia/"


def default_base(profile: Profile, override: str | None) -> Base:
    if override:
        check_image(override, "--base")
        return Base(override, "", override)
    if not profile.image:
        raise SparkenvError(f"profile {profile.name} names no base image: pass --base IMAGE")
    ref = f"{profile.image}@{profile.digest}" if profile.digest else profile.image
    return Base(ref, profile.digest, profile.image)


@dataclass
class Plan:
    profile: Profile
    lock: Lock
    base: Base
    version: str
    ca_bundle: Path | None = None
    sdpa: bool = False
    runtime: list[Path] = field(default_factory=list)  # sparkenv's wheel + its runtime wheels

    def labels(self) -> dict[str, str]:
        return {
            "org.opencontainers.image.title": f"sparkenv {self.profile.name}",
            "org.opencontainers.image.description": f"{self.profile.describe()} + {self.lock.file.name}",
            "org.opencontainers.image.version": self.kept_lock_hash.removeprefix("sha256:")[:12],
            "org.opencontainers.image.base.name": self.base.name,
            "org.opencontainers.image.base.digest": self.base.digest,
            "io.sparkenv.profile": self.profile.name,
            "io.sparkenv.lock-hash": self.kept_lock_hash,
            "io.sparkenv.version": self.version,
            "io.sparkenv.base-digest": self.base.digest,
            "io.sparkenv.sdpa": "true" if self.sdpa else "false",
            **(
                {"io.sparkenv.allow-replace": ",".join(sorted(self.allowed_replace))}
                if self.allowed_replace
                else {}
            ),
        }

    @property
    def stages(self) -> list[str]:
        """The lock's install stages that install something, in order."""
        return [s.name for s in self.lock.stages if s.packages]

    @property
    def kept_lock_hash(self) -> str:
        """sha256 of the lock as the image keeps it (what the gate and audit hash inside the image)."""
        return "sha256:" + Lock.digest_of(self._pylock_bytes())

    def _indexes(self) -> list[str]:
        return [u for u in (self.lock.index_url, *self.lock.extra_index_urls) if u]

    def netrc(self) -> str:
        """Credentials for the lock's indexes, from where pip and uv read them (an older lock's own
        user-info included): the fetch stage's downloads see them as a BuildKit secret (`secrets`), no
        file of the context or layer holds them."""
        credentials.remember(self._indexes())
        lines = credentials.netrc_lines(self._indexes())
        return "\n".join(lines) + "\n" if lines else ""

    def secrets(self) -> dict[str, bytes]:
        """What the build mounts as BuildKit secrets: the netrc, when an index needs a credential."""
        text = self.netrc()
        return {buildkit.SECRET_ID: text.encode()} if text else {}

    def _pylock_bytes(self) -> bytes:
        """The pylock as the image keeps it, without credentials (a lock written before sparkenv
        redacted them may hold some): the bytes whose hash the labels name."""
        try:
            data = safe_read.read_bytes(self.lock.file, what="a pylock.toml lock", limit=16 << 20)
        except safe_read.UnreadableFile as exc:
            raise SparkenvError(f"{self.lock.path}: cannot read the lock: {exc.reason}") from None
        if Lock.digest_of(data) != self.lock.sha256:
            raise SparkenvError(f"{self.lock.path}: changed while sparkenv build read it: build again")
        return redact(data.decode("utf-8", errors="surrogateescape")).encode(
            "utf-8", errors="surrogateescape"
        )

    def _kept_profile(self) -> tuple[str, bytes] | None:
        """The lock's profile file as the image keeps it, beside the lock (lock/profile.py kept_path: where
        of_lock finds it there): its path relative to the lock's folder and its bytes, credentials
        redacted as the lock's are; None for a shipped profile."""

        kept = lockprofile.kept_path(self.lock)
        if kept is None or not self.profile.file:
            return None
        try:
            data = safe_read.read_bytes(self.profile.file, what="a profile file", limit=16 << 20)
        except safe_read.UnreadableFile as exc:
            raise SparkenvError(f"{self.profile.file}: cannot read the profile: {exc.reason}") from None
        text = redact(data.decode("utf-8", errors="surrogateescape"))
        return kept, text.encode("utf-8", errors="surrogateescape")

    @property
    def allowed_replace(self) -> set[str]:
        """What the lock replaces of the base on purpose (`sparkenv lock --allow-replace`)."""
        return set(self.lock.allow_replace)

    def dockerfile(self) -> str:
        template = template_text(TEMPLATE)
        fetch: list[str] = []
        install: list[str] = []
        if self.ca_bundle:
            fetch += ["COPY ca/ca.pem /tmp/sparkenv-ca.pem", "ENV PIP_CERT=/tmp/sparkenv-ca.pem"]
        # an index's credential: a BuildKit secret mounted for the download alone (pip reads NETRC), never
        # a file of the context, which a stage would keep in the engine's cache
        secret = f"{buildkit.mount()} " if self.netrc() else ""
        for stage in self.stages:
            req = stage_file(stage)
            fetch += [
                f"COPY lock/{req} /tmp/sparkenv-lock/{req}",
                f"RUN {secret}{PIP} download --no-deps --require-hashes --only-binary=:all: {PIP_FLAGS} "
                f"-d /wheels/{stage} -r /tmp/sparkenv-lock/{req}",
            ]
            install += [
                f"# stage {stage}: installed with --no-deps, every file checked against the lock's hashes",
                f"COPY lock/{req} /tmp/sparkenv-lock/{req}",
                f"COPY --from=fetch /wheels/{stage} /tmp/sparkenv-wheels/{stage}",
                f"RUN {BREAK} {PIP} install --no-deps --require-hashes --no-index "
                f"--find-links /tmp/sparkenv-wheels/{stage} {PIP_FLAGS} -r /tmp/sparkenv-lock/{req} \\\n"
                f"    && rm -rf /tmp/sparkenv-wheels/{stage}",
            ]
        sdpa = (
            "# The project asks for SDPA: the G2 override, by a .pth (SPARKENV_SDPA=0 turns it off)\n"
            'RUN /usr/local/bin/sparkenv patch sdpa --install "$(command -v python3)"'
            if self.sdpa
            else "# No SDPA override: the project did not ask for it (sparkenv build --sdpa)"
        )
        kept, named = self._kept_profile(), self.lock.profile or self.profile.name
        labels = " \\\n      ".join(f"{k}={json.dumps(v)}" for k, v in self.labels().items())
        values = {
            "PROFILE": self.profile.name,
            "LOCK": self.lock.file.name,
            "VERSION": self.version,
            "BASE": self.base.ref,
            "FETCH": "\n".join(fetch),
            # a package the lock replaces on purpose (`sparkenv lock --allow-replace`) is not guarded
            "PROVIDED": " ".join(p for p in self.profile.provides if p not in self.allowed_replace) or "",
            "INSTALL": "\n".join(install),
            "SDPA": sdpa,
            "PROFILE_FILE": (
                f"# The lock's profile file, where the image's audit and gate find it\n"
                f"COPY lock/{kept[0]} /opt/sparkenv/{kept[0]}"
                if kept
                else f"# No profile file kept: the lock names its profile, {named}, by name"
            ),
            "LABELS": labels,
            "ENTRYPOINT": json.dumps(self.base.chain()[0]),
            "CMD": json.dumps(self.base.chain()[1]),
        }
        out = template
        for key, value in values.items():
            out = out.replace("{{" + key + "}}", value)
        leftover = re.search(r"\{\{\w+\}\}", out)
        if leftover:
            raise SparkenvError(f"dockerfiles/{TEMPLATE}: unknown placeholder {leftover.group(0)}")
        return out

    def files(self) -> dict[str, tuple[bytes, int]]:
        """Context path -> (content, mode); the Dockerfile included."""

        pkg = resources.files("sparkenv.image")
        out: dict[str, tuple[bytes, int]] = {
            "Dockerfile": (self.dockerfile().encode(), 0o644),
            "sparkenv/base_check.py": (pkg.joinpath("base_check.py").read_bytes(), 0o644),
            "sparkenv/sparkenv.sh": (pkg.joinpath("sparkenv.sh").read_bytes(), 0o755),
            "lock/pylock.toml": (self._pylock_bytes(), 0o644),
        }
        kept = self._kept_profile()
        if kept:
            out[f"lock/{kept[0]}"] = (kept[1], 0o644)
        for stage in self.lock.stages:
            if stage.packages:
                text = redact(lockwrite.stage_requirements(self.lock, stage))
                out[f"lock/{stage_file(stage.name)}"] = (text.encode(), 0o644)
        for wheel in self.runtime:
            out[f"sparkenv/runtime/{wheel.name}"] = (wheel.read_bytes(), 0o644)
        out["sparkenv/runtime/requirements.txt"] = (
            runtime.requirements_txt(self.runtime, "/tmp/sparkenv-runtime").encode(),
            0o644,
        )
        if self.ca_bundle:
            try:
                data = safe_read.read_bytes(self.ca_bundle, what="a CA bundle (PEM)", limit=16 << 20)
            except safe_read.UnreadableFile as exc:
                raise SparkenvError(f"{self.ca_bundle}: cannot read the CA bundle: {exc.reason}") from None
            out["ca/ca.pem"] = (data, 0o644)
        return out


def tar(files: dict[str, tuple[bytes, int]]) -> io.BytesIO:
    """A reproducible tar: fixed owner and mtime, sorted, so the engine's layer cache holds across runs."""
    buf = io.BytesIO()
    with tarfile.open(fileobj=buf, mode="w", format=tarfile.PAX_FORMAT) as tf:
        for name in sorted(files):
            data, mode = files[name]
            info = tarfile.TarInfo(name)
            info.size, info.mode, info.mtime = len(data), mode, 315532800
            tf.addfile(info, io.BytesIO(data))
    buf.seek(0)
    return buf

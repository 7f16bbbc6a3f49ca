"""What `sparkenv build` sends to the engine: the Dockerfile rendered from dockerfiles/ (package data) and
the context files (lock stages, sparkenv's runtime, the base check, an optional CA bundle). No Docker
needed here."""

from __future__ import annotations

import hashlib
import io
import json
import re
import tarfile
from dataclasses import dataclass, field
from importlib import resources
from pathlib import Path

from sparkenv import confine, profiles, safe_read
from sparkenv.errors import SparkenvError
from sparkenv.profiles import Profile
from sparkenv.resolve import lockfile

TEMPLATE = "ngc.Dockerfile"
PIP = "python3 -m pip"
PIP_FLAGS = "--no-cache-dir --disable-pip-version-check --no-input"
_STAGE_RE = re.compile(r"^# stage (\S+)")
ARCH = {"aarch64": "arm64", "x86_64": "amd64"}


@dataclass(frozen=True)
class Lock:
    pylock: Path
    requirements: Path
    tool: dict[str, object]
    header: list[str]  # option lines (index URLs) that apply to every stage
    stages: list[tuple[str, str]]  # (stage name, requirement lines)

    @property
    def stem(self) -> str:
        return self.pylock.name.removeprefix("pylock.").removesuffix(".toml")

    @property
    def hash(self) -> str:
        return "sha256:" + hashlib.sha256(self.pylock.read_bytes()).hexdigest()

    def stage_file(self, stage: str) -> str:
        return f"requirements.{stage}.txt"

    def stage_text(self, stage: str, body: str) -> str:
        return "\n".join([*self.header, f"# stage {stage}", body.strip(), ""])

    @property
    def report_path(self) -> Path:
        """Where the image's own audit report is kept: next to the lock."""
        return self.pylock.with_name(f"image-audit.{self.stem}.json")


def read_lock(path: Path) -> Lock:
    """A pylock.<profile>.toml written by `sparkenv lock` (or its requirements.<profile>.txt)."""
    if path.name.startswith("requirements.") and path.suffix == ".txt":
        path = path.with_name(
            "pylock." + path.name.removeprefix("requirements.").removesuffix(".txt") + ".toml"
        )
    if not path.is_file():
        raise SparkenvError(f"{path}: no such lock (write one with `sparkenv lock INPUT…`)")
    tool = lockfile.read_tool(path)
    req_name = tool.get("requirements")
    if not isinstance(req_name, str):
        raise SparkenvError(f"{path}: [tool.sparkenv] names no requirements file")
    # the lock may come from another repository: its requirements file lies beside it, nowhere else
    where = f"{path}: [tool.sparkenv] requirements"
    req = confine.inside(
        confine.project_root(path.parent), confine.plain_name(req_name, where), path.parent, where
    )
    try:
        text = safe_read.read_text(req, what="the lock's hashed requirements", limit=16 << 20)
    except safe_read.UnreadableFile as exc:
        raise SparkenvError(f"{req}: cannot read the lock's hashed requirements: {exc.reason}") from None
    header: list[str] = []
    stages: list[tuple[str, list[str]]] = []
    for line in text.splitlines():
        m = _STAGE_RE.match(line)
        if m:
            stages.append((m.group(1), []))
        elif stages:
            if line.strip() and not line.lstrip().startswith("#"):
                stages[-1][1].append(line)
        elif line.startswith("-"):
            header.append(line)
    if not any(body for _, body in stages):
        raise SparkenvError(f"{req}: no `# stage` sections with requirements (not written by sparkenv lock?)")
    for _, body in stages:
        for line in body:
            if line.startswith((" ", "\t")):
                continue
            if "==" not in line:
                raise SparkenvError(f"{req}: {line.strip()!r} is not pinned with == (a lock pins everything)")
    return Lock(path, req, tool, header, [(name, "\n".join(body)) for name, body in stages if body])


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
    command line), else the profile the lock names."""
    named = str(lock.tool.get("profile") or "")
    if not arg and named.endswith(".toml"):  # a profile file the lock names stays inside its project
        root = confine.project_root(lock.pylock.parent)
        confine.inside(root, named, lock.pylock.parent, f"{lock.pylock}: [tool.sparkenv] profile")
    elif not arg and named and named not in profiles.shipped():
        raise SparkenvError(
            f"{lock.pylock}: locked for profile {named}, which is not a shipped one: pass the profile file "
            f"it was locked with (--profile {named}.toml)"
        )
    prof = profiles.load(arg) if arg else profiles.load(named or None, lock.pylock.parent)
    if named and prof.name != named:
        raise SparkenvError(
            f"{lock.pylock}: locked for profile {named}, not {prof.name}: re-lock or drop --profile"
        )
    return prof


@dataclass(frozen=True)
class Base:
    ref: str  # what FROM names
    digest: str  # recorded in the labels ("" when unknown)
    name: str  # the image name without digest, for the OCI base.name label


def default_base(profile: Profile, override: str | None) -> Base:
    if override:
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
            "org.opencontainers.image.description": f"{self.profile.describe()} + {self.lock.pylock.name}",
            "org.opencontainers.image.version": self.lock.hash.removeprefix("sha256:")[:12],
            "org.opencontainers.image.base.name": self.base.name,
            "org.opencontainers.image.base.digest": self.base.digest,
            "io.sparkenv.profile": self.profile.name,
            "io.sparkenv.lock-hash": self.lock.hash,
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
    def allowed_replace(self) -> set[str]:
        """What the lock replaces of the base on purpose (`sparkenv lock --allow-replace`)."""
        return {str(x) for x in self.lock.tool.get("allow-replace", []) or []}

    def dockerfile(self) -> str:
        template = template_text(TEMPLATE)
        fetch: list[str] = []
        install: list[str] = []
        if self.ca_bundle:
            fetch += ["COPY ca/ca.pem /tmp/sparkenv-ca.pem", "ENV PIP_CERT=/tmp/sparkenv-ca.pem"]
        for stage, _ in self.lock.stages:
            req = self.lock.stage_file(stage)
            fetch += [
                f"COPY lock/{req} /tmp/sparkenv-lock/{req}",
                f"RUN {PIP} download --no-deps --require-hashes --only-binary=:all: {PIP_FLAGS} "
                f"-d /wheels/{stage} -r /tmp/sparkenv-lock/{req}",
            ]
            install += [
                f"# stage {stage}: installed with --no-deps, every file checked against the lock's hashes",
                f"COPY lock/{req} /tmp/sparkenv-lock/{req}",
                f"COPY --from=fetch /wheels/{stage} /tmp/sparkenv-wheels/{stage}",
                f"RUN {PIP} install --no-deps --require-hashes --no-index "
                f"--find-links /tmp/sparkenv-wheels/{stage} {PIP_FLAGS} -r /tmp/sparkenv-lock/{req} \\\n"
                f"    && rm -rf /tmp/sparkenv-wheels/{stage}",
            ]
        sdpa = (
            "# The project asks for SDPA: the G2 override, by a .pth (SPARKENV_SDPA=0 turns it off)\n"
            'RUN /usr/local/bin/sparkenv patch sdpa --install "$(command -v python3)"'
            if self.sdpa
            else "# No SDPA override: the project did not ask for it (sparkenv build --sdpa)"
        )
        labels = " \\\n      ".join(f"{k}={json.dumps(v)}" for k, v in self.labels().items())
        values = {
            "PROFILE": self.profile.name,
            "LOCK": self.lock.pylock.name,
            "VERSION": self.version,
            "BASE": self.base.ref,
            "FETCH": "\n".join(fetch),
            # a package the lock replaces on purpose (`sparkenv lock --allow-replace`) is not guarded
            "PROVIDED": " ".join(p for p in self.profile.provides if p not in self.allowed_replace) or "",
            "INSTALL": "\n".join(install),
            "SDPA": sdpa,
            "LABELS": labels,
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
        from sparkenv.build import runtime

        pkg = resources.files("sparkenv.build")
        out: dict[str, tuple[bytes, int]] = {
            "Dockerfile": (self.dockerfile().encode(), 0o644),
            "sparkenv/base_check.py": (pkg.joinpath("base_check.py").read_bytes(), 0o644),
            "sparkenv/sparkenv.sh": (pkg.joinpath("sparkenv.sh").read_bytes(), 0o755),
            "lock/pylock.toml": (self.lock.pylock.read_bytes(), 0o644),
        }
        for stage, body in self.lock.stages:
            out[f"lock/{self.lock.stage_file(stage)}"] = (self.lock.stage_text(stage, body).encode(), 0o644)
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

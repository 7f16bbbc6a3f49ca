"""Resolution targets: NGC images and a bare Spark, as dated TOML data (sparkenv/data/profiles/).

A user adds a target without touching code: `--profile path/to/my.toml` (same keys as the shipped
files), or `[tool.sparkenv] profile = "…"` / `profile-file = "…"` in pyproject.toml.
"""

from __future__ import annotations

import dataclasses
import functools
import os
import re
from dataclasses import dataclass, field, replace
from importlib import resources
from pathlib import Path
from typing import Any

from packaging.version import InvalidVersion, Version

from sparkenv import knowledge
from sparkenv.core import safe_read, schema
from sparkenv.core.datafiles import parse_toml, parse_user_toml
from sparkenv.core.errors import SparkenvError
from sparkenv.core.image_reference import check_digest, check_image
from sparkenv.core.names import canonical
from sparkenv.environment.markers import marker_environment

PLATFORMS = {
    "linux/aarch64": "aarch64",
    "linux/arm64": "aarch64",
    "linux/amd64": "x86_64",
    "linux/x86_64": "x86_64",
}
# One spelling printed for each machine, whichever was given (Docker says arm64, uname and wheel tags
# aarch64; both are accepted everywhere). The engine gets Docker's own spelling.
SPELLING = {"aarch64": "linux/aarch64", "x86_64": "linux/amd64"}
DOCKER_SPELLING = {"aarch64": "linux/arm64", "x86_64": "linux/amd64"}
MACHINE_ALIASES = {"aarch64": "aarch64", "arm64": "aarch64", "x86_64": "x86_64", "amd64": "x86_64"}


def uv_platform(machine: str, glibc: str) -> str:
    """uv's --python-platform for a CPU and a glibc version: x86_64-manylinux_2_36. The levels uv names
    are data (toolchain.toml [uv]): a newer glibc than uv knows gets the newest level it knows."""

    try:
        major, minor = (int(x) for x in (glibc or "2.17").split(".")[:2])
    except ValueError:
        major, minor = 2, 17
    levels = knowledge.toolchain().uv.manylinux_levels
    level = next((m for m in levels if major > 2 or m <= minor), 17)
    return f"{machine}-manylinux_2_{level}"


def canonical_platform(platform: str) -> str:
    """`linux/arm64` -> `linux/aarch64`; a platform that is not one of PLATFORMS is a usage error."""
    if platform not in PLATFORMS:
        raise SparkenvError(f"--platform {platform}: not one of {', '.join(sorted(PLATFORMS))}")
    return SPELLING[PLATFORMS[platform]]


def canonical_machine(machine: str) -> str:
    """`arm64` -> `aarch64`, `amd64` -> `x86_64` (an ELF machine name, as the audit prints it)."""
    found = MACHINE_ALIASES.get(machine.strip().lower())
    if found is None:
        raise SparkenvError(f"--machine {machine}: not one of aarch64, x86_64 (arm64 and amd64 also work)")
    return found


# A hand-written profile needs only these; every other key has a default (_default.toml, [profile]).
_REQUIRED = ("name", "image")
# A profile's name becomes part of file names (lockfiles/pylock.<name>.toml): no folders, no traversal.
NAME_RE = re.compile(r"[a-z0-9._-]{1,100}")  # it names files (pylock.<name>.toml): a bounded length
_SCHEMA = {
    "name": schema.STRING,
    "reviewed": schema.STRING_OR_DATE,
    "source": schema.STRING,
    "description": schema.STRING,
    "image": schema.STRING,
    "digest": schema.STRING,
    "python": schema.STRING,
    "cuda": schema.STRING,
    "glibc": schema.STRING,
    "manylinux": schema.STRING,
    "platform": schema.STRING,
    "provides": schema.STRING_TABLE,
    "satisfies": schema.STRING_TABLE,
    "env": schema.STRING_TABLE,
    "components": schema.STRING_TABLE,
    "unverified": schema.STRINGS,
}


@dataclass(frozen=True)
class Profile:
    name: str
    reviewed: str
    source: str
    description: str
    image: str
    digest: str
    python: str  # full version, "3.12.3"
    cuda: str
    glibc: str
    manylinux: str  # "manylinux_2_39"
    platform: str  # "linux/aarch64"
    provides: dict[str, str] = field(default_factory=dict)  # normalized name -> version ("" unknown)
    satisfies: dict[str, str] = field(default_factory=dict)  # other name -> provided name
    env: dict[str, str] = field(default_factory=dict)
    # What the image holds that is not a Python distribution, as its release notes list it (cudnn, nccl,
    # ubuntu, ...): data for the report, never resolved against.
    components: dict[str, str] = field(default_factory=dict)
    # Keys of this profile whose value no public source confirmed ("torch", "cudnn", "cuda", ...): each
    # stage that uses the profile says so once (rules/data_age.py).
    unverified: tuple[str, ...] = ()
    path: str = ""  # the file it came from
    file: str = ""  # a profile loaded from a file: that file's real path (a shipped profile: "")

    @property
    def machine(self) -> str:
        return PLATFORMS[self.platform]

    @property
    def python_minor(self) -> str:
        return ".".join(self.python.split(".")[:2])

    @property
    def python_platform(self) -> str:
        """uv's --python-platform: aarch64-manylinux_2_39."""
        return uv_platform(self.machine, self.manylinux.removeprefix("manylinux_").replace("_", "."))

    @property
    def file_stem(self) -> str:
        """PEP 751 lock names allow no dots: ngc-25.11 -> pylock.ngc-25-11.toml."""
        return self.name.replace(".", "-")

    def provider(self, key: str) -> str | None:
        """The base distribution that satisfies a requirement on `key`, if any."""
        if key in self.provides:
            return key
        alias = self.satisfies.get(key)
        return alias if alias in self.provides else None

    def excluded(self) -> list[str]:
        """Names kept out of resolution: what the base provides and their other names."""
        return sorted({*self.provides, *(k for k, v in self.satisfies.items() if v in self.provides)})

    def marker_env(self) -> dict[str, str]:
        """The environment markers are evaluated in: the target's, never the host's."""

        return marker_environment(self.machine, self.python)

    def with_platform(self, platform: str | None) -> Profile:
        if not platform:
            return self
        platform = canonical_platform(platform)
        if platform == canonical_platform(self.platform):
            return self

        return replace(self, platform=platform)

    def describe(self) -> str:
        image = self.image or "no base image"
        return f"{self.name} ({image}, Python {self.python_minor}, CUDA {self.cuda}, {self.python_platform})"


def _data_dir():
    """The shipped profiles: a plain folder (importlib.resources, which imports tempfile, zipfile and a
    dozen more, only where sparkenv runs from a zip archive, as datafiles.load does)."""
    here = Path(__file__).resolve().parent.parent / "data" / "profiles"
    if here.is_dir():
        return here

    return resources.files("sparkenv").joinpath("data", "profiles")


def _parse(text: str, where: str) -> Profile:
    data = _checked(_toml(text, where), where)
    data = {**defaults(), **{k: v for k, v in data.items() if v != "" or k in ("image", "digest")}}
    if not data.get("manylinux"):
        data["manylinux"] = "manylinux_" + str(data["glibc"]).replace(".", "_")
    if not data.get("source"):
        data["source"] = f"{where} (hand-written)"
    provides = _values(data, where)

    if data.get("image"):  # "" is allowed: a profile for a venv, built on with --base
        check_image(str(data["image"]), f"{where}: image")
    check_digest(str(data.get("digest", "")), f"{where}: digest")
    return Profile(
        name=str(data["name"]),
        reviewed=str(data.get("reviewed", "")),
        source=str(data["source"]),
        description=str(data.get("description", "")),
        image=str(data.get("image", "")),
        digest=str(data.get("digest", "")),
        python=str(data["python"]),
        cuda=str(data["cuda"]),
        glibc=str(data.get("glibc", "")),
        manylinux=str(data["manylinux"]),
        platform=str(data["platform"]),
        provides=provides,
        satisfies={canonical(k): canonical(v) for k, v in (data.get("satisfies") or {}).items()},
        env={str(k): str(v) for k, v in (data.get("env") or {}).items()},
        components={str(k): str(v) for k, v in (data.get("components") or {}).items()},
        unverified=_unverified(data, provides, where),
        path=where,
    )


def _toml(text: str, where: str) -> dict[str, Any]:

    return parse_user_toml(text, where)


def _checked(data: dict[str, Any], where: str) -> dict[str, Any]:
    """The keys a profile needs, the schema's types, and a name that can name lock files."""
    missing = [k for k in _REQUIRED if k not in data or (k == "name" and not data.get(k))]
    if missing:
        raise SparkenvError(
            f"{where}: profile lacks {' and '.join(missing)} (a profile needs name and image, the rest has "
            "defaults; `sparkenv profiles new NAME --from-image IMAGE` writes a complete one)"
        )
    schema.check(data, _SCHEMA, where)
    if not NAME_RE.fullmatch(data["name"]):
        raise SparkenvError(
            f"{where}: name {data['name'][:120]!r} may hold only a-z, 0-9, '.', '_' and '-', at most 100 of "
            "them (it names lock files)"
        )
    return data


def _values(data: dict[str, Any], where: str) -> dict[str, str]:
    """Versions that must be versions, a known platform; returns `provides` with canonical names."""
    for key in ("python", "cuda"):
        try:
            Version(data[key])
        except InvalidVersion:
            raise SparkenvError(f"{where}: {key} = {data[key]!r} is not a version") from None
    if data["platform"] not in PLATFORMS:
        raise SparkenvError(
            f"{where}: platform {data['platform']!r} is not one of {', '.join(sorted(PLATFORMS))}"
        )
    provides = {canonical(k): str(v) for k, v in (data.get("provides") or {}).items()}
    for key, version in provides.items():
        if version:
            try:
                Version(version)
            except InvalidVersion:
                raise SparkenvError(
                    f"{where}: provides.{schema.key_text(key)} = {version!r} is not a version"
                ) from None
    return provides


def _unverified(data: dict[str, Any], provides: dict[str, str], where: str) -> tuple[str, ...]:
    """The keys `unverified` names, each one the profile holds (a field, a provided distribution or a
    component): a name it does not hold is a typo that would hide what is unconfirmed."""
    names = [str(n) for n in data.get("unverified") or ()]
    held = {*_SCHEMA, *provides, *(data.get("components") or {})}
    for name in names:
        if name not in held and canonical(name) not in provides:
            raise SparkenvError(f"{where}: unverified names {name!r}, which the profile does not hold")
    return tuple(dict.fromkeys(names))


@functools.cache
def shipped() -> dict[str, Profile]:
    out: dict[str, Profile] = {}
    for entry in sorted(_data_dir().iterdir(), key=lambda e: e.name):
        if entry.name.endswith(".toml") and not entry.name.startswith("_"):
            prof = _parse(entry.read_text(encoding="utf-8"), f"sparkenv/data/profiles/{entry.name}")
            out[prof.name] = prof
    return out


@functools.cache
def _shipped_file(name: str) -> Profile | None:
    """The shipped profile `name` from its own file (<name>.toml, as each is named), without parsing
    the others (a lock waits on this before uv starts); None when no file of that name holds it."""
    if not NAME_RE.fullmatch(name) or name.startswith("_"):
        return None
    entry = _data_dir().joinpath(f"{name}.toml")
    if not entry.is_file():
        return None
    prof = _parse(entry.read_text(encoding="utf-8"), f"sparkenv/data/profiles/{name}.toml")
    return prof if prof.name == name else None


@functools.cache
def _defaults_file() -> dict[str, Any]:

    return parse_toml(_data_dir().joinpath("_default.toml").read_text(encoding="utf-8"))


def default_name() -> str:
    return str(_defaults_file()["default"])


def defaults() -> dict[str, str]:
    """What a profile gets for a key it leaves out: the DGX Spark's own platform (_default.toml)."""
    return {str(k): str(v) for k, v in (_defaults_file().get("profile") or {}).items()}


def load(name_or_path: str | None, base_dir: Path | None = None) -> Profile:
    """A shipped profile by name, or a profile file by path (relative to base_dir when given)."""
    if not name_or_path:
        name_or_path = default_name()
    one = _shipped_file(name_or_path)
    if one is not None:
        return one
    profiles = shipped()
    if name_or_path in profiles:
        return profiles[name_or_path]
    if name_or_path.endswith(".toml"):
        path = Path(name_or_path)
        if not path.is_absolute() and base_dir is not None:
            path = base_dir / path

        try:
            text = safe_read.read_text(path, what="a profile file", limit=1 << 20)
        except safe_read.UnreadableFile as exc:
            raise SparkenvError(f"{name_or_path}: cannot read profile file: {exc.reason}") from None

        return dataclasses.replace(_parse(text, str(name_or_path)), file=os.path.realpath(path))
    raise SparkenvError(
        f"unknown profile {name_or_path!r}: choose one of {', '.join(profiles)} "
        "(`sparkenv profiles`), or give a profile file (*.toml)"
    )


def parse(text: str, where: str) -> Profile:
    """A profile from TOML text; `where` names it in errors."""
    return _parse(text, where)

"""What a lock says, as one frozen object (read.py builds it; write.py renders files from it)."""

from __future__ import annotations

import hashlib
from dataclasses import dataclass, field
from pathlib import Path

# The [tool.sparkenv] format this sparkenv writes and reads; a lock of another format must be re-locked.
FORMAT = 1


@dataclass(frozen=True)
class LockedPackage:
    name: str  # normalized
    version: str | None  # None: listed without an exact version (a hand-written requirements file)
    stage: str = ""  # its [packages.tool.sparkenv] stage; "" outside a lock sparkenv wrote
    marker: str | None = None
    hashes: tuple[str, ...] = ()  # sha256 of each file: the wheels in the lock's order, then the sdist

    def requirement(self) -> str:
        """Its entry in a hashed requirements file (installed with --no-deps --require-hashes)."""
        marker = f" ; {self.marker}" if self.marker else ""
        body = [f"{self.name}=={self.version}{marker}"] + [f"    --hash=sha256:{h}" for h in self.hashes]
        return " \\\n".join(body)


@dataclass(frozen=True)
class LockStage:
    name: str
    no_deps: bool  # its own pip install --no-deps, after the stages before it
    packages: tuple[LockedPackage, ...] = ()


@dataclass(frozen=True)
class Lock:
    path: str  # as the user named it: findings quote it
    packages: tuple[LockedPackage, ...]
    # From [tool.sparkenv]; a foreign pylock or a requirements file has none of it (sparkenv is False).
    sparkenv: bool = False
    format: int | None = None
    profile: str = ""
    profile_hash: str = ""
    profile_file: str = ""  # a profile from a file: its path relative to the project root (posix)
    image: str = ""
    digest: str = ""
    platform: str = ""
    python_platform: str = ""
    requires_python: str = ""
    inputs: tuple[str, ...] = ()
    input_hash: str = ""  # of the inputs' bytes
    # of the inputs' parsed requirements (Inputs.requirements_digest); "" in a lock written before it
    requirements_hash: str = ""
    excluded: frozenset[str] = frozenset()  # what the base provides, left out on purpose
    allow_replace: frozenset[str] = frozenset()  # base packages the lock replaces on purpose
    exclude_newer: str = ""
    stages: tuple[LockStage, ...] = ()  # install order
    index_url: str = ""
    extra_index_urls: tuple[str, ...] = ()
    requirements: str = ""  # the hashed requirements file's name, beside the pylock
    sha256: str = field(default="", compare=False)  # of the pylock's bytes as read

    @property
    def file(self) -> Path:
        return Path(self.path)

    @property
    def pins(self) -> dict[str, str | None]:
        """Normalized name -> exact version (None when listed but not pinned exactly)."""
        return {p.name: p.version for p in self.packages}

    @property
    def stem(self) -> str:
        """pylock.ngc-25-11.toml -> ngc-25-11."""
        return self.file.name.removeprefix("pylock.").removesuffix(".toml")

    def index_lines(self) -> list[str]:
        """The pip options every stage installs with: the indexes the lock was resolved against."""
        lines = [f"--index-url {self.index_url}"] if self.index_url else []
        return lines + [f"--extra-index-url {u}" for u in self.extra_index_urls]

    @staticmethod
    def digest_of(data: bytes) -> str:
        return hashlib.sha256(data).hexdigest()


@dataclass(frozen=True)
class ProfileOfLock:
    """The profile a lock records, looked up as `lock --check` and `build` look it up (lock/profile.py)."""

    lock: str  # the lock as the user named it
    profile: str  # as found: a shipped name, or the file as typed from the working folder
    found: bool
    changed: bool = False  # its content is not what the lock recorded (profile-hash)
    why: str = ""  # not found: why (the lookup's one-line error)

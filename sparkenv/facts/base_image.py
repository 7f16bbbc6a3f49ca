"""What a base image is, read from it once (sparkenv/image/base_probe.py): its python3 answering a
standard-library probe, and its configuration. `profiles new --from-image` writes a profile from these
facts; `sparkenv build` compares them with the lock's profile before its first step."""

from __future__ import annotations

from dataclasses import dataclass, field


@dataclass(frozen=True)
class BaseImage:
    image: str  # as the user named it
    python: str  # "3.12.3": platform.python_version() of the image's python3
    implementation: str  # "CPython"
    machine: str  # platform.machine() inside the image ("x86_64", "aarch64")
    architecture: str  # the configuration's ("amd64", "arm64")
    glibc: str  # "" when the image's C library is not glibc
    cuda: str = ""
    cuda_source: str = ""  # where the CUDA version was read ("CUDA_VERSION", a version.json)
    os: str = ""  # PRETTY_NAME of /etc/os-release
    site: tuple[str, ...] = ()  # the python3's site folders
    dists: dict[str, str] = field(default_factory=dict)  # name as installed -> version
    env: dict[str, str] = field(default_factory=dict)  # the configuration's environment
    image_id: str = ""
    repo_digests: tuple[str, ...] = ()  # sha256:… digests of the registries it came from
    entrypoint: tuple[str, ...] = ()  # the configuration's ENTRYPOINT and CMD
    cmd: tuple[str, ...] = ()
    externally_managed: str = ""  # PEP 668: the python3's EXTERNALLY-MANAGED marker, "" when it has none

    @property
    def python_minor(self) -> str:
        return ".".join(self.python.split(".")[:2])

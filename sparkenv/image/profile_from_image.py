"""`sparkenv profiles new NAME --from-image IMAGE`: run the image once and write a complete profile.

The image's own python3 runs a standard-library script (nothing installed; its entrypoint bypassed, so
NGC's banner stays out) that prints its Python, CPU, glibc, CUDA and installed distributions; platform,
digest and environment come from the image's configuration. What could not be read is written as
UNVERIFIED with the default used. `provides` lists every distribution but pip, setuptools and wheel
(resolution must not replace what the base installed; users upgrade those tools freely); the environment
keeps the variables that steer CUDA, pip and the frameworks, never ones that look like credentials.
"""

from __future__ import annotations

import datetime
import json
import os
import re
from pathlib import Path

from packaging.utils import canonicalize_name
from packaging.version import InvalidVersion, Version

from sparkenv.core.errors import SparkenvError
from sparkenv.core.image_reference import check_image
from sparkenv.core.printable import printable
from sparkenv.core.redact import url_without_secrets
from sparkenv.core.safe_read import check_length
from sparkenv.environment import profiles
from sparkenv.facts.base_image import BaseImage
from sparkenv.image import base_probe, engine
from sparkenv.image.context import BREAK
from sparkenv.render.emit import write_atomic

PACKAGING_TOOLS = {"pip", "setuptools", "wheel"}
ENV_PREFIXES = (
    "NVIDIA_",
    "CUDA_",
    "CUDNN_",
    "NCCL_",
    "PIP_",
    "PYTORCH_",
    "TORCH_",
    "TRITON_",
    "NV_",
    "TRT",
    "VLLM_",
    "HF_",
    "UNSLOTH_",
    "PYTHON",
    "LD_LIBRARY_PATH",
)
SECRET_RE = re.compile(r"TOKEN|SECRET|PASSWORD|KEY|CREDENTIAL", re.I)
ARCH_TO_PLATFORM = {"arm64": "linux/aarch64", "amd64": "linux/amd64"}


def read_image(image: str, platform: str | None = None, timeout: float | None = None) -> BaseImage:
    """Facts of IMAGE: sparkenv/image/base_probe.py, the one reader of a base (build reads it so too)."""

    client = engine.connect()  # without the docker SDK: exit 3 naming sparkenv[build]
    return base_probe.read(client, image, platform, timeout or base_probe.PROBE_TIMEOUT)


def _toml_key(key: str) -> str:
    return key if re.fullmatch(r"[A-Za-z0-9_-]+", key) else json.dumps(key)


def _toml_str(value: str) -> str:
    return json.dumps(value, ensure_ascii=False)  # a JSON string is a TOML basic string


def render(name: str, image: str, facts: BaseImage, today: datetime.date) -> str:
    """The profile's TOML text, commented: where each value came from, and what is UNVERIFIED."""

    digest = facts.repo_digests[0] if facts.repo_digests else ""
    identity = f"{image}@{digest}" if digest else f"{image} (image id {facts.image_id}, not from a registry)"
    lines = [
        f"# {name}: written by `sparkenv profiles new {name} --from-image {image}` on {today.isoformat()},",
        "# from the image itself (its python3 and its configuration). Refresh with the same command.",
        f"name = {_toml_str(name)}",
        f"reviewed = {_toml_str(today.isoformat())}",
        f"source = {_toml_str(identity)}",
    ]
    osname = facts.os or "unknown OS"
    described = f"{image} ({osname}, Python {facts.python}, CUDA {facts.cuda or '?'})"
    lines.append(f"description = {_toml_str(described)}")
    lines.append(f"image = {_toml_str(image)}")
    if not digest:
        lines.append("# UNVERIFIED: no registry digest (a local image); FROM uses the name")
    lines.append(f"digest = {_toml_str(digest)}")
    lines.append(pep668(facts))
    lines.append(f"python = {_toml_str(facts.python)}")
    lines += _platform_lines(facts, profiles.defaults())
    provided = _provided(facts)
    where = ", ".join(facts.site) or "its site folders"
    lines += ["", f"# Every distribution in {where} (pip, setuptools and wheel left out).", "[provides]"]
    lines += [f"{_toml_key(k)} = {_toml_str(v)}" for k, v in provided.items()]
    lines += ["", "[satisfies]"]
    if "pytorch-triton" in provided:
        lines.append('triton = "pytorch-triton"')
    lines += ["", "# The image's environment that steers CUDA, pip and the frameworks.", "[env]"]
    lines += _env_lines(facts)
    return "\n".join(lines) + "\n"


PEP668 = "# PEP 668: "


def pep668(facts: BaseImage) -> str:
    """What the image's python3 says of PEP 668, as a comment of the profile (and a line of `profiles
    new`): whether its installs are refused as externally managed, and how `sparkenv build` installs on it
    (the image is the environment: the build passes the base's own override, and its base check guards
    what the marker protects, the base's packages)."""
    if not facts.externally_managed:
        return f"{PEP668}python3 is not externally managed (no EXTERNALLY-MANAGED marker in its stdlib)"
    setting = facts.env.get("PIP_BREAK_SYSTEM_PACKAGES", "")
    said = (
        f"the image sets PIP_BREAK_SYSTEM_PACKAGES={setting}"
        if setting
        else "the image does not set PIP_BREAK_SYSTEM_PACKAGES"
    )

    return (
        f"{PEP668}python3 is externally managed ({facts.externally_managed}; {said}): "
        f"`sparkenv build` installs with {BREAK}, its base check guards the base's packages"
    )


def _platform_lines(facts: BaseImage, defaults: dict[str, str]) -> list[str]:
    """cuda, glibc, manylinux and platform: the image's, else the DGX Spark's marked UNVERIFIED."""
    lines = []
    if facts.cuda:
        lines.append(f"# read from {facts.cuda_source}")
        lines.append(f"cuda = {_toml_str(facts.cuda)}")
    else:
        lines.append(
            "# UNVERIFIED: the image names no CUDA (no CUDA_VERSION, no /usr/local/cuda/version.json)"
        )
        lines.append(f"cuda = {_toml_str(defaults['cuda'])}")
    glibc = facts.glibc
    if not glibc:
        lines.append("# UNVERIFIED: no glibc found in the image; the DGX Spark's is assumed")
        glibc = defaults["glibc"]
    lines.append(f"glibc = {_toml_str(glibc)}")
    lines.append(f"manylinux = {_toml_str('manylinux_' + glibc.replace('.', '_'))}")
    platform = ARCH_TO_PLATFORM.get(facts.architecture, "")
    if not platform:
        lines.append(f"# UNVERIFIED: architecture {facts.architecture!r} is neither arm64 nor amd64")
        platform = defaults["platform"]
    lines.append(f"platform = {_toml_str(platform)}")
    return lines


def _provided(facts: BaseImage) -> dict[str, str]:
    """Every distribution in the image by its canonical name (packaging tools left out), with its
    version, or '' where the version is a legacy string resolution cannot compare."""

    provided: dict[str, str] = {}
    for raw, version in sorted(facts.dists.items(), key=lambda kv: canonicalize_name(kv[0])):
        key = canonicalize_name(raw)
        if key in PACKAGING_TOOLS or key in provided:
            continue
        try:
            Version(version)
        except InvalidVersion:
            version = ""  # a legacy version string resolution cannot compare: provided, version unknown
        provided[key] = version
    return provided


def _env_lines(facts: BaseImage) -> list[str]:
    """The image's variables that steer CUDA, pip and the frameworks; never one named like a secret."""
    env = {
        k: v for k, v in sorted(facts.env.items()) if k.startswith(ENV_PREFIXES) and not SECRET_RE.search(k)
    }
    # a URL in a variable (PIP_INDEX_URL, PIP_EXTRA_INDEX_URL) loses its user:password@ and its query
    # string: nothing sparkenv writes holds a credential
    return [
        f"{_toml_key(k)} = {_toml_str(' '.join(map(url_without_secrets, v.split(' '))))}"
        for k, v in env.items()
    ]


def write_profile(
    name: str, image: str, output: str | None, force: bool, platform: str | None
) -> tuple[Path, str]:
    """Run IMAGE, write NAME's profile (default ./NAME.toml); the text is checked by sparkenv's own
    profile reader before anything is written, and written whole or not at all."""

    if not profiles.NAME_RE.fullmatch(name):
        raise SparkenvError(
            f"{printable(name)[:120]!r}: not a profile name (1 to 100 of a-z, 0-9, '.', '_' and '-': "
            "it names lock files)"
        )
    # the Docker grammar first: a reference it refuses (a newline, upper case, a leading dash) is one line
    # before the engine is asked, and never reaches the written profile's `image`
    check_image(image, "--from-image")
    dest = Path(output or f"{name}.toml")
    check_length(dest, "-o")
    if dest.exists() and not force:
        raise SparkenvError(f"{dest}: exists; pass --force to replace it")
    if not dest.parent.is_dir():
        raise SparkenvError(f"{dest.parent}: no such folder")
    facts = read_image(image, platform)
    text = render(name, image, facts, datetime.date.today())
    profiles.parse(text, str(dest))  # what sparkenv writes, sparkenv must read
    write_atomic(str(dest), text)
    return dest, text


def summary(dest: Path, text: str) -> str:
    prof = _reparse(dest, text)
    unverified = text.count("# UNVERIFIED")
    note = f"; {unverified} value(s) UNVERIFIED (see the comments)" if unverified else ""
    managed = next((ln[2:] for ln in text.splitlines() if ln.startswith(PEP668)), "")
    return (
        f"wrote {dest}: {prof.describe()}, {len(prof.provides)} distributions provided, "
        f"{len(prof.env)} environment variables{note}. Use it: sparkenv lock INPUT --profile {dest}"
        + (f"\n{managed}" if managed else "")
    )


def _reparse(dest: Path, text: str):  # type: ignore[no-untyped-def]

    return profiles.parse(text, os.fspath(dest))

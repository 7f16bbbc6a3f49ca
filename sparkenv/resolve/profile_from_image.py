"""`sparkenv profiles new NAME --from-image IMAGE`: run the image once and write a complete profile.

The image's own python3 runs a standard-library script (nothing is installed into it; its entrypoint is
bypassed, so NGC's banner and entrypoint.d parts stay out of the output) that prints its Python, CPU,
glibc, CUDA and every installed distribution. Platform, digest and environment come from the image's
configuration. What could not be read is written with a comment saying UNVERIFIED and the default used.

Decisions: `provides` lists every distribution of the image except the packaging tools (pip,
setuptools, wheel), since resolution must not replace anything the base installed (G9) and users
upgrade those tools freely; the environment keeps the variables that steer CUDA, pip and the
frameworks, never ones that look like credentials.
"""

from __future__ import annotations

import datetime
import json
import os
import re
from pathlib import Path
from typing import Any, NoReturn

from sparkenv import schema
from sparkenv.errors import SparkenvError
from sparkenv.printable import printable

PROBE_TIMEOUT = 120
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

# Runs inside the image with its python3 (any 3.x): standard library only, one JSON object on stdout.
PROBE = r"""
import json, os, platform, sys
try:
    import importlib.metadata as md
except ImportError:
    md = None
site = [p for p in sys.path if p.endswith(("site-packages", "dist-packages")) and os.path.isdir(p)]
dists = {}
if md is not None:
    for d in md.distributions(path=site):
        name = d.metadata["Name"]
        if name and name not in dists:
            dists[name] = d.version or ""
cuda = os.environ.get("CUDA_VERSION", "")
cuda_source = "CUDA_VERSION" if cuda else ""
if not cuda:
    try:
        with open("/usr/local/cuda/version.json") as fh:
            cuda = json.load(fh)["cuda"]["version"]
            cuda_source = "/usr/local/cuda/version.json"
    except Exception:
        pass
libc, libc_version = platform.libc_ver()
osname = ""
try:
    with open("/etc/os-release") as fh:
        for line in fh:
            if line.startswith("PRETTY_NAME="):
                osname = line.split("=", 1)[1].strip().strip('"')
except OSError:
    pass
print(json.dumps({
    "python": platform.python_version(),
    "machine": platform.machine(),
    "glibc": libc_version if libc == "glibc" else "",
    "cuda": cuda,
    "cuda_source": cuda_source,
    "os": osname,
    "site": site,
    "dists": dists,
}))
"""


# What the probe prints, checked before a value is used: a hostile image can print anything.
_ANSWER = {
    "python": schema.STRING,
    "machine": schema.STRING,
    "glibc": schema.STRING,
    "cuda": schema.STRING,
    "cuda_source": schema.STRING,
    "os": schema.STRING,
    "site": schema.STRINGS,
    "dists": schema.STRING_TABLE,
}
_ANSWER_LIMIT = 4 << 20  # bytes: an NGC image's answer is ~30 KB


def read_image(image: str, platform: str | None = None, timeout: int = PROBE_TIMEOUT) -> dict[str, Any]:
    """Facts of IMAGE: the probe's output plus what the image's configuration says."""
    from sparkenv.image import engine

    client = engine.connect()  # without the docker SDK: exit 3 naming sparkenv[build]
    img = engine.local_image(client, image)
    if img is None:

        def not_pulled(line: str) -> NoReturn:
            raise SparkenvError(
                f"{image}: not here and could not be pulled ({line[:200]}): "
                f"docker pull {image}, or docker login to its registry"
            )

        with engine.talking(f"the pull of {image}", refused=not_pulled):
            img = client.images.pull(image, platform=platform)
    attrs = img.attrs
    what = f"{image}'s python3"
    ran = engine.run_once(
        client, img.id, ["python3", "-c", PROBE], timeout=timeout, label="io.sparkenv.probe", what=what,
        name="probe",
    )  # fmt: skip
    if ran.exit_code != 0:
        last = (ran.stderr.strip().splitlines() or ["no output"])[-1][:300]
        raise SparkenvError(f"{image}: running its python3 failed ({last}): is it a Python image?")
    facts = _answer(image, ran.stdout, ran.truncated)
    config = attrs.get("Config") or {}
    facts["architecture"] = str(attrs.get("Architecture", ""))
    facts["image_id"] = str(attrs.get("Id", ""))
    facts["repo_digests"] = [d.split("@", 1)[1] for d in attrs.get("RepoDigests") or [] if "@" in d]
    facts["env"] = dict(e.split("=", 1) for e in config.get("Env") or [] if isinstance(e, str) and "=" in e)
    return facts


def _answer(image: str, out: str, truncated: bool) -> dict[str, Any]:
    """The probe's JSON line, by the schema: every key present with its type, within the size cap."""
    if truncated or len(out) > _ANSWER_LIMIT:
        raise SparkenvError(
            f"{image}: its python3 printed over {_ANSWER_LIMIT >> 20} MiB: not sparkenv's probe"
        )
    try:
        facts = json.loads(out.strip().splitlines()[-1])
    except (ValueError, IndexError, RecursionError):
        raise SparkenvError(
            f"{image}: its python3 printed no readable answer ({printable(out.strip()[-200:])!r})"
        ) from None
    if not isinstance(facts, dict):
        raise SparkenvError(f"{image}: its python3 answered {schema.describe(facts)}, not sparkenv's probe")
    missing = sorted(set(_ANSWER) - set(facts))
    if missing:
        raise SparkenvError(f"{image}: its python3's answer lacks {', '.join(missing)}: not sparkenv's probe")
    schema.check(facts, _ANSWER, f"{image}: its python3's answer")
    return facts


def _without_credentials(value: str) -> str:
    """An index URL with its user:password@ removed (PIP_INDEX_URL=https://user:token@host/simple)."""
    from urllib.parse import urlsplit, urlunsplit

    try:
        parts = urlsplit(value)
    except ValueError:
        return value
    if "@" not in parts.netloc:
        return value
    return urlunsplit(parts._replace(netloc=parts.netloc.rsplit("@", 1)[1]))


def _toml_key(key: str) -> str:
    return key if re.fullmatch(r"[A-Za-z0-9_-]+", key) else json.dumps(key)


def _toml_str(value: str) -> str:
    return json.dumps(value, ensure_ascii=False)  # a JSON string is a TOML basic string


def render(name: str, image: str, facts: dict[str, Any], today: datetime.date) -> str:
    """The profile's TOML text, commented: where each value came from, and what is UNVERIFIED."""
    from sparkenv import profiles

    digest = facts["repo_digests"][0] if facts["repo_digests"] else ""
    identity = (
        f"{image}@{digest}" if digest else f"{image} (image id {facts['image_id']}, not from a registry)"
    )
    lines = [
        f"# {name}: written by `sparkenv profiles new {name} --from-image {image}` on {today.isoformat()},",
        "# from the image itself (its python3 and its configuration). Refresh with the same command.",
        f"name = {_toml_str(name)}",
        f"reviewed = {_toml_str(today.isoformat())}",
        f"source = {_toml_str(identity)}",
    ]
    osname = facts.get("os") or "unknown OS"
    described = f"{image} ({osname}, Python {facts['python']}, CUDA {facts.get('cuda') or '?'})"
    lines.append(f"description = {_toml_str(described)}")
    lines.append(f"image = {_toml_str(image)}")
    if not digest:
        lines.append("# UNVERIFIED: no registry digest (a local image); FROM uses the name")
    lines.append(f"digest = {_toml_str(digest)}")
    lines.append(f"python = {_toml_str(facts['python'])}")
    lines += _platform_lines(facts, profiles.defaults())
    provided = _provided(facts)
    where = ", ".join(facts.get("site") or []) or "its site folders"
    lines += ["", f"# Every distribution in {where} (pip, setuptools and wheel left out).", "[provides]"]
    lines += [f"{_toml_key(k)} = {_toml_str(v)}" for k, v in provided.items()]
    lines += ["", "[satisfies]"]
    if "pytorch-triton" in provided:
        lines.append('triton = "pytorch-triton"')
    lines += ["", "# The image's environment that steers CUDA, pip and the frameworks.", "[env]"]
    lines += _env_lines(facts)
    return "\n".join(lines) + "\n"


def _platform_lines(facts: dict[str, Any], defaults: dict[str, str]) -> list[str]:
    """cuda, glibc, manylinux and platform: the image's, else the DGX Spark's marked UNVERIFIED."""
    lines = []
    if facts.get("cuda"):
        lines.append(f"# read from {facts.get('cuda_source')}")
        lines.append(f"cuda = {_toml_str(str(facts['cuda']))}")
    else:
        lines.append(
            "# UNVERIFIED: the image names no CUDA (no CUDA_VERSION, no /usr/local/cuda/version.json)"
        )
        lines.append(f"cuda = {_toml_str(defaults['cuda'])}")
    glibc = facts.get("glibc") or ""
    if not glibc:
        lines.append("# UNVERIFIED: no glibc found in the image; the DGX Spark's is assumed")
        glibc = defaults["glibc"]
    lines.append(f"glibc = {_toml_str(glibc)}")
    lines.append(f"manylinux = {_toml_str('manylinux_' + glibc.replace('.', '_'))}")
    platform = ARCH_TO_PLATFORM.get(facts.get("architecture", ""), "")
    if not platform:
        lines.append(f"# UNVERIFIED: architecture {facts.get('architecture')!r} is neither arm64 nor amd64")
        platform = defaults["platform"]
    lines.append(f"platform = {_toml_str(platform)}")
    return lines


def _provided(facts: dict[str, Any]) -> dict[str, str]:
    """Every distribution in the image by its canonical name (packaging tools left out), with its
    version, or '' where the version is a legacy string resolution cannot compare."""
    from packaging.utils import canonicalize_name
    from packaging.version import InvalidVersion, Version

    provided: dict[str, str] = {}
    for raw, version in sorted(facts.get("dists", {}).items(), key=lambda kv: canonicalize_name(kv[0])):
        key = canonicalize_name(raw)
        if key in PACKAGING_TOOLS or key in provided:
            continue
        try:
            Version(version)
        except InvalidVersion:
            version = ""
        provided[key] = version
    return provided


def _env_lines(facts: dict[str, Any]) -> list[str]:
    """The image's variables that steer CUDA, pip and the frameworks; never one named like a secret."""
    env = {
        k: v
        for k, v in sorted(facts.get("env", {}).items())
        if k.startswith(ENV_PREFIXES) and not SECRET_RE.search(k)
    }
    # a URL in a variable (PIP_INDEX_URL, PIP_EXTRA_INDEX_URL) loses its user:password@: nothing
    # sparkenv writes holds a credential
    return [
        f"{_toml_key(k)} = {_toml_str(' '.join(map(_without_credentials, v.split(' '))))}"
        for k, v in env.items()
    ]


def write_profile(
    name: str, image: str, output: str | None, force: bool, platform: str | None
) -> tuple[Path, str]:
    """Run IMAGE, write NAME's profile (default ./NAME.toml); the text is checked by sparkenv's own
    profile reader before anything is written, and written whole or not at all."""
    from sparkenv import profiles
    from sparkenv.render.emit import write_atomic

    if not profiles.NAME_RE.fullmatch(name):
        raise SparkenvError(f"{name!r}: not a profile name (a-z, 0-9, '.', '_' and '-': it names lock files)")
    dest = Path(output or f"{name}.toml")
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
    return (
        f"wrote {dest}: {prof.describe()}, {len(prof.provides)} distributions provided, "
        f"{len(prof.env)} environment variables{note}. Use it: sparkenv lock INPUT --profile {dest}"
    )


def _reparse(dest: Path, text: str):  # type: ignore[no-untyped-def]
    from sparkenv import profiles

    return profiles.parse(text, os.fspath(dest))

"""Read a base image once: its configuration, and its own python3 answering a standard-library probe.

The one reader of a base: `sparkenv profiles new --from-image` writes a profile from what it returns,
and `sparkenv build` compares it with the lock's profile before its first step. The probe runs in a
throw-away container (network off, entrypoint bypassed so NGC's banner stays out of the output) through
engine.run_once: a timeout, and the container removed on every way out, signals included. Nothing is
installed into the image.
"""

from __future__ import annotations

import json
from typing import Any, NoReturn

from sparkenv.core import schema
from sparkenv.core.errors import ServiceMissing, SparkenvError
from sparkenv.core.printable import printable
from sparkenv.facts.base_image import BaseImage
from sparkenv.image import engine

PROBE_TIMEOUT = 120

# Runs inside the image with its python3 (any 3.x): standard library only, one JSON object on stdout.
PROBE = r"""
import json, os, platform, sys, sysconfig
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
managed = os.path.join(sysconfig.get_path("stdlib") or "", "EXTERNALLY-MANAGED")  # PEP 668's marker
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
    "implementation": platform.python_implementation(),
    "machine": platform.machine(),
    "glibc": libc_version if libc == "glibc" else "",
    "cuda": cuda,
    "cuda_source": cuda_source,
    "os": osname,
    "site": site,
    "dists": dists,
    "externally_managed": managed if os.path.isfile(managed) else "",
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
_OPTIONAL = {"implementation": schema.STRING, "externally_managed": schema.STRING}  # "" when absent
_ANSWER_LIMIT = 4 << 20  # bytes: an NGC image's answer is ~30 KB


def local_or_pulled(client: Any, image: str, platform: str | None = None, otherwise: str = "") -> Any:
    """The engine's image `image`, pulled when it is not here; not pullable: exit 3 saying how to get it
    (the same words whoever asks: build or profiles new), and `otherwise` (build: pass --base IMAGE)."""

    img = engine.local_image(client, image)
    if img is not None:
        return img

    def not_pulled(line: str) -> NoReturn:
        alternative = f", or {otherwise}" if otherwise else ""
        raise ServiceMissing(
            f"{image}: not here and could not be pulled ({line[:200]}): run `docker pull {image}` where a "
            f"registry is reachable (docker login for a private one){alternative}"
        )

    with engine.talking(f"the pull of {image}", refused=not_pulled):
        return client.images.pull(image, platform=platform)


def read(
    client: Any, image: str, platform: str | None = None, timeout: float = PROBE_TIMEOUT, otherwise: str = ""
) -> BaseImage:
    """Facts of IMAGE (pulled when not here): the probe's answer plus its configuration."""

    img = local_or_pulled(client, image, platform, otherwise)
    attrs = img.attrs
    what = f"{image}'s python3"
    ran = engine.run_once(
        client, img.id, ["python3", "-c", PROBE], timeout=timeout, label="io.sparkenv.probe", what=what,
        name="probe",
    )  # fmt: skip
    if ran.exit_code != 0:
        last = (ran.stderr.strip().splitlines() or ["no output"])[-1][:300]
        raise SparkenvError(f"{image}: running its python3 failed ({last}): is it a Python image?")
    answer = _answer(image, ran.stdout, ran.truncated)
    config = attrs.get("Config") or {}
    return BaseImage(
        image=image,
        python=answer["python"],
        implementation=answer.get("implementation", ""),
        machine=answer["machine"],
        architecture=str(attrs.get("Architecture", "")),
        glibc=answer["glibc"],
        cuda=answer["cuda"],
        cuda_source=answer["cuda_source"],
        os=answer["os"],
        site=tuple(answer["site"]),
        dists=dict(answer["dists"]),
        externally_managed=answer.get("externally_managed", ""),
        env=dict(e.split("=", 1) for e in config.get("Env") or [] if isinstance(e, str) and "=" in e),
        image_id=str(attrs.get("Id", "")),
        repo_digests=tuple(d.split("@", 1)[1] for d in attrs.get("RepoDigests") or [] if "@" in d),
        entrypoint=tuple(str(x) for x in config.get("Entrypoint") or ()),
        cmd=tuple(str(x) for x in config.get("Cmd") or ()),
    )


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
    shape = {**_ANSWER, **{k: v for k, v in _OPTIONAL.items() if k in facts}}
    schema.check(facts, shape, f"{image}: its python3's answer")
    return facts

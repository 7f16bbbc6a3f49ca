"""Real parts for the `sparkenv build` tests: a Docker engine, an NGC-like stand-in base image (debootstrap
+ `docker import`, cached by tag: built once per machine), small real wheels served from a local PEP 503
index on 127.0.0.1 (tests/artifacts.py), and locks written in sparkenv's own format."""

from __future__ import annotations

import hashlib
import io
import os
import re
import shutil
import signal
import subprocess
import tarfile
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

import artifacts
import pytest

ROOTFS_TAG = "sparkenv-test/debian-rootfs:bookworm"
# Bump the number when the recipe below changes: the tag is the cache key.
STANDIN_TAG = "sparkenv-test/ngc-standin:4"
SITE = "/usr/local/lib/python3.11/dist-packages"
# What the stand-in "provides" (profile tests/.../standin.toml): versions shaped like NGC's.
PROVIDES = {"torch": "2.10.0a0+b558c986e8.nv25.11", "pytorch-triton": "3.5.0+gitde3506d2"}
# /etc/pip/constraint.txt pins triton but not torch: NGC's constraint did not stop a torch swap either
# (FACTS.md, unslothai/notebooks#132); the base check in the build is what stops it.
CONSTRAINED = {"pytorch-triton": "3.5.0+gitde3506d2"}


def skip_unless_required(reason: str) -> None:
    """Skip a Docker test for what this machine lacks; under SPARKENV_REQUIRE_DOCKER=1 (CI, which provides
    the engine, gcc, root, tini, a second user) the same lack is a failure: CI never skips these."""
    if os.environ.get("SPARKENV_REQUIRE_DOCKER") == "1":
        pytest.fail(reason + "; SPARKENV_REQUIRE_DOCKER=1 makes this a failure (.ci/run provides it)")
    pytest.skip(reason)


def engine_or_skip():  # type: ignore[no-untyped-def]
    """A docker client; with SPARKENV_REQUIRE_DOCKER=1 a missing engine fails the test instead of skipping."""
    try:
        import docker

        client = docker.from_env(timeout=60)
        client.ping()
        return client
    except Exception as exc:
        skip_unless_required(f"no Docker engine answers ({exc.__class__.__name__}: {str(exc)[:120]})")


def debian_mirror() -> str:
    for f in [*sorted(Path("/etc/apt/sources.list.d").glob("*")), Path("/etc/apt/sources.list")]:
        try:
            text = f.read_text()
        except OSError:
            continue
        for m in re.finditer(r"(?:URIs:\s*|^deb\s+(?:\[[^\]]*\]\s+)?)(\S+)", text, re.M):
            url = m.group(1)
            if url.rstrip("/").endswith("/debian"):
                return url
    return "http://deb.debian.org/debian"


def cuda13_libs(cc: str = "gcc") -> dict[str, bytes]:
    """torch/lib/libtorch_cuda.so linked against a stub libcudart.so.13: real ELF, compiled by `cc`
    (aarch64-linux-gnu-gcc for the arm64 stand-in)."""
    with tempfile.TemporaryDirectory() as tmp:
        d = Path(tmp)
        (d / "stub.c").write_text("int sparkenv_stub(void) { return 1; }\n")
        (d / "m.c").write_text("int sparkenv_torch_cuda(void) { return 2; }\n")
        flags = [cc, "-shared", "-fPIC"]
        subprocess.run(
            [*flags, "-Wl,-soname,libcudart.so.13", "-o", "libcudart.so.13", "stub.c"],
            cwd=d,
            check=True,
            timeout=120,
            capture_output=True,
        )
        subprocess.run(
            [*flags, "-o", "libtorch_cuda.so", "m.c", "-Wl,--no-as-needed", "./libcudart.so.13"],
            cwd=d,
            check=True,
            timeout=120,
            capture_output=True,
        )
        return {f"torch/lib/{n}": (d / n).read_bytes() for n in ("libtorch_cuda.so", "libcudart.so.13")}


def fake_dist(name: str, version: str, cc: str = "gcc", tag: str = "py3-none-any") -> dict[str, bytes]:
    """An installed distribution's files (dist-info with a RECORD, one module), as pip would leave them;
    torch with its CUDA library built by `cc` and its wheel `tag`."""
    mod = name.replace("-", "_")
    files = {
        **(cuda13_libs(cc) if name == "torch" else {}),
        f"{mod}/__init__.py": f"__version__ = {version!r}\n".encode(),
    }
    return artifacts.dist_info(name, version, (), files, tag=tag, purelib=True)


ENTRYPOINT_SH = """#!/bin/bash
# Stand-in for NGC's /opt/nvidia/nvidia_entrypoint.sh: source entrypoint.d/*.sh, cat *.txt, exec "$@".
for f in /opt/nvidia/entrypoint.d/*; do
  case "$f" in
    *.txt) cat "$f" ;;
    *.sh) source "$f" ;;
  esac
done
if [ $# -eq 0 ]; then exec /bin/bash; fi
exec "$@"
"""


def ensure_standin(client, timeout: float = 900) -> str:  # type: ignore[no-untyped-def]
    """The NGC-like stand-in base, built once per machine (cached by STANDIN_TAG)."""
    from docker.errors import ImageNotFound

    try:
        client.images.get(STANDIN_TAG)
        return STANDIN_TAG
    except ImageNotFound:
        pass
    try:
        client.images.get(ROOTFS_TAG)
    except ImageNotFound:
        _import_rootfs(timeout)
    ctx: dict[str, bytes] = {"nvidia_entrypoint.sh": ENTRYPOINT_SH.encode()}
    for name, version in PROVIDES.items():
        for path, data in fake_dist(name, version).items():
            ctx[f"site/{path}"] = data
    ctx["constraint.txt"] = "".join(f"{k}=={v}\n" for k, v in CONSTRAINED.items()).encode()
    ctx["10-banner.txt"] = b"== NGC stand-in (sparkenv tests) ==\n"
    ctx["20-env.sh"] = b'export NGC_STANDIN_PART=sourced\necho "entrypoint.d: 20-env.sh sourced"\n'
    ctx["Dockerfile"] = f"""FROM {ROOTFS_TAG}
COPY site/ {SITE}/
COPY constraint.txt /etc/pip/constraint.txt
COPY nvidia_entrypoint.sh /opt/nvidia/nvidia_entrypoint.sh
COPY 10-banner.txt 20-env.sh /opt/nvidia/entrypoint.d/
RUN chmod +x /opt/nvidia/nvidia_entrypoint.sh
ENV NVIDIA_PYTORCH_VERSION=25.11 PIP_CONSTRAINT=/etc/pip/constraint.txt PIP_BREAK_SYSTEM_PACKAGES=1 \\
    PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin
ENTRYPOINT ["/opt/nvidia/nvidia_entrypoint.sh"]
""".encode()
    client.images.build(
        fileobj=context_tar(ctx), custom_context=True, tag=STANDIN_TAG, rm=True, forcerm=True, timeout=600
    )
    return STANDIN_TAG


def context_tar(ctx: dict[str, bytes]) -> io.BytesIO:
    """A build context: the .sh files executable, the rest plain files."""

    buf = io.BytesIO()
    with tarfile.open(fileobj=buf, mode="w") as tf:
        for name, data in sorted(ctx.items()):
            info = tarfile.TarInfo(name)
            info.size, info.mode = len(data), 0o755 if name.endswith(".sh") else 0o644
            tf.addfile(info, io.BytesIO(data))
    buf.seek(0)
    return buf


# A base whose python3 is another version than the stand-in's (and than the machine's 3.11 on CI): Debian
# trixie's Python 3.13, no entrypoint, nothing provided beyond Debian's own packages. Built once per
# machine (debootstrap + docker import, ~2 min), cached by tag.
TRIXIE_ROOTFS_TAG = "sparkenv-test/debian-rootfs:trixie"
OTHER_PYTHON_TAG = "sparkenv-test/python313:1"


def ensure_other_python(client, timeout: float = 900) -> str:  # type: ignore[no-untyped-def]
    """The trixie base (Python 3.13), built once per machine (cached by OTHER_PYTHON_TAG)."""
    from docker.errors import ImageNotFound

    try:
        client.images.get(OTHER_PYTHON_TAG)
        return OTHER_PYTHON_TAG
    except ImageNotFound:
        pass
    try:
        client.images.get(TRIXIE_ROOTFS_TAG)
    except ImageNotFound:
        _import_rootfs(timeout, "trixie", TRIXIE_ROOTFS_TAG, "python3,python3-pip")
    # pip installs into the system Python as NGC's images allow it (PEP 668's marker is there in Debian)
    dockerfile = f"FROM {TRIXIE_ROOTFS_TAG}\nENV PIP_BREAK_SYSTEM_PACKAGES=1\n"
    client.images.build(
        fileobj=context_tar({"Dockerfile": dockerfile.encode()}),
        custom_context=True,
        tag=OTHER_PYTHON_TAG,
        rm=True,
        forcerm=True,
        timeout=600,
    )
    return OTHER_PYTHON_TAG


def _import_rootfs(
    timeout: float,
    suite: str = "bookworm",
    tag: str = ROOTFS_TAG,
    include: str = "python3,python3-venv,python3-pip",
) -> None:
    if shutil.which("debootstrap") is None:
        subprocess.run(
            ["apt-get", "install", "-y", "-qq", "debootstrap"],
            check=True,
            timeout=300,
            capture_output=True,
            env={**os.environ, "DEBIAN_FRONTEND": "noninteractive"},
        )
    with tempfile.TemporaryDirectory(prefix="sparkenv-rootfs-") as tmp:
        root = Path(tmp) / "rootfs"
        proc = subprocess.run(
            [
                "debootstrap",
                "--variant=minbase",
                f"--include={include}",
                suite,
                str(root),
                debian_mirror(),
            ],
            capture_output=True,
            text=True,
            timeout=timeout,
        )
        if proc.returncode != 0:
            pytest.fail(f"debootstrap failed: {proc.stderr.strip()[-500:]}")
        tar = subprocess.Popen(["tar", "-C", str(root), "-c", "."], stdout=subprocess.PIPE)
        imp = subprocess.run(
            ["docker", "import", "-", tag],
            stdin=tar.stdout,
            capture_output=True,
            text=True,
            timeout=300,
        )
        tar.wait(timeout=60)
        if imp.returncode != 0:
            pytest.fail(f"docker import failed: {imp.stderr.strip()}")


def layers_holding(client, ref: str, needle: bytes) -> list[str]:  # type: ignore[no-untyped-def]
    """Every member of `docker save` (config, manifest, each layer and every file inside it) holding it."""
    saved = io.BytesIO(b"".join(client.images.get(ref).save(named=True)))
    found = []
    with tarfile.open(fileobj=saved) as outer:
        for member in outer.getmembers():
            if not member.isfile():
                continue
            data = outer.extractfile(member).read()  # type: ignore[union-attr]
            if needle in data:
                found.append(member.name)
            if data[:262][257:262] == b"ustar" or member.name.endswith(("layer.tar", ".tar")):
                try:
                    with tarfile.open(fileobj=io.BytesIO(data)) as layer:
                        for f in layer.getmembers():
                            fh = layer.extractfile(f) if f.isfile() else None
                            if fh is not None and needle in fh.read():
                                found.append(f"{member.name}:{f.name}")
                except tarfile.TarError:
                    pass
    return found


# ---- locks in sparkenv's format, over wheels served by artifacts.serve_index --------------------------


STANDIN_PROFILE = """name = "standin"
reviewed = "2026-11-30"
source = "tests/build_helpers.py: the NGC-like stand-in base built by the test suite"
description = "Debian bookworm stand-in for NGC 25.11 (tests only)"
image = "{image}"
python = "3.11.2"
cuda = "13.0.2"
glibc = "2.36"
manylinux = "manylinux_2_36"
platform = "linux/amd64"

[provides]
{provides}
"""


def write_lock(folder: Path, index_url: str, stages: dict[str, list[Path]], image: str) -> Path:
    """pylock.standin.toml + requirements.standin.txt in sparkenv lock's format, and the stand-in profile."""
    from sparkenv.lock import read, write

    provides = "\n".join(f'{k} = "{v}"' for k, v in PROVIDES.items())
    (folder / "standin.toml").write_text(STANDIN_PROFILE.format(image=image, provides=provides))
    packages = []
    for stage, wheels in stages.items():
        for w in wheels:
            name, version = w.name.split("-")[:2]
            packages.append(
                {
                    "name": re.sub(r"[-_.]+", "-", name).lower(),
                    "version": version,
                    "wheels": [
                        {
                            "url": artifacts.file_url(index_url, w.name),
                            "hashes": {"sha256": hashlib.sha256(w.read_bytes()).hexdigest()},
                        }
                    ],
                    "tool": {"sparkenv": {"stage": stage}},
                }
            )
    tool = {
        "format": 1,
        "profile": "standin",
        "image": image,
        "digest": "",
        "platform": "linux/amd64",
        "stages": list(stages),
        "no-deps-stages": [s for s in stages if "unsloth" in s],
        "requirements": "requirements.standin.txt",
        "index-url": index_url,
    }
    pylock = folder / "pylock.standin.toml"
    text = write.render_pylock(packages, tool, "==3.11.*", "sys_platform == 'linux'")
    pylock.write_text(text)
    lock = read.from_text(text, pylock)
    (folder / "requirements.standin.txt").write_text(write.render_requirements(lock, ["test lock"]))
    return pylock


def sigterm_when(proc: subprocess.Popen[str], ready: Callable[[], bool], wait_s: float) -> str:
    """Wait, while `proc` runs, until ready() (at most wait_s), a second more, then send it SIGTERM; its
    stderr. The process never outlives the call."""
    try:
        deadline = time.monotonic() + wait_s
        while not ready():
            assert proc.poll() is None and time.monotonic() < deadline, proc.communicate()[1][-2000:]
            time.sleep(0.5)
        time.sleep(1)
        proc.send_signal(signal.SIGTERM)
        return proc.communicate(timeout=120)[1]
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()


def probe_containers(ref: str) -> list[str]:
    """The base-probe containers (label io.sparkenv.probe) of image `ref` still on the engine."""
    done = subprocess.run(
        ["docker", "ps", "-aq", "--filter", "label=io.sparkenv.probe", "--filter", f"ancestor={ref}"],
        capture_output=True,
        text=True,
        timeout=60,
    )
    return done.stdout.split()

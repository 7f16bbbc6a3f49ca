"""The aarch64 half of the build tests' real parts: qemu-user emulation through binfmt_misc, and an
NGC-like arm64 stand-in base image, so `sparkenv build --platform linux/arm64` runs end to end here.

The base: a Debian bookworm root made by `debootstrap --arch=arm64 --foreign` (first stage on the host),
its second stage run under qemu (`chroot`; binfmt's F flag makes the emulator usable inside the root and
in containers), loaded as an image whose configuration says arm64 (`docker import` records the host's
architecture, whatever --platform says, so the image archive is written here), then NGC's markers on
top: NVIDIA_PYTORCH_VERSION and CUDA_VERSION, /etc/pip/constraint.txt, NGC's entrypoint layout, a torch
dist-info with an NGC version label whose torch/lib/libtorch_cuda.so is an aarch64 ELF built by the
cross compiler and linked against a stub libcudart.so.13 in /usr/local/cuda/lib64 (found through the
root's own ld.so.cache, written by its own ldconfig under emulation).

Both images are cached by tag (the tag is the cache key: bump it when the recipe changes). .ci/run
builds them before the tests (`python3 tests/arm64_standin.py`, which prints how long each step took);
a test run on a machine without them builds them itself.
"""

from __future__ import annotations

import hashlib
import io
import json
import os
import shutil
import subprocess
import sys
import tarfile
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

import artifacts
import build_helpers as bh

ROOTFS_TAG = "sparkenv-test/debian-rootfs-arm64:bookworm-1"
STANDIN_TAG = "sparkenv-test/ngc-standin-arm64:1"
SUITE = "bookworm"
INCLUDE = "python3,python3-pip"
CROSS_GCC = "aarch64-linux-gnu-gcc"
BINFMT = Path("/proc/sys/fs/binfmt_misc/qemu-aarch64")
CUDA_VERSION = "13.0.2"
CUDA_MINOR = "13.0"  # torch.version.cuda
NGC_RELEASE = "25.11"
CUDA_LIB = "/usr/local/cuda/lib64"
# NGC builds torch itself: its WHEEL tag names the platform, not a manylinux policy
TORCH_WHEEL_TAG = "cp311-cp311-linux_aarch64"
PATH = "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"


class NotProvisioned(Exception):
    """What the machine lacks to run aarch64 images: the message says how .ci/run provides it."""


def emulation_problem(binfmt: Path = BINFMT, machine: str | None = None) -> str | None:
    """Why an aarch64 program cannot run here, or None when it can (natively or through qemu)."""
    if (machine or os.uname().machine) == "aarch64":
        return None
    try:
        text = binfmt.read_text()
    except OSError:
        return (
            f"{binfmt} is missing: no qemu handler for aarch64 programs (apt-get install qemu-user-static "
            "binfmt-support; mount -t binfmt_misc binfmt_misc /proc/sys/fs/binfmt_misc; update-binfmts "
            "--enable qemu-aarch64: .ci/run does it)"
        )
    lines = text.splitlines()
    if not lines or lines[0].strip() != "enabled":
        return f"{binfmt} is disabled: update-binfmts --enable qemu-aarch64"
    flags = next((ln.split(":", 1)[1] for ln in lines if ln.startswith("flags:")), "")
    if "F" not in flags:
        return (
            f"{binfmt} lacks the F flag: inside a container or chroot the kernel cannot open the emulator "
            "(qemu-user-static registers it with F)"
        )
    return None


def _run(cmd: list[str], what: str, timeout: float, **kw) -> subprocess.CompletedProcess[str]:  # type: ignore[no-untyped-def]
    try:
        proc = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout, **kw)
    except subprocess.TimeoutExpired:
        raise NotProvisioned(f"{what} took over {timeout:.0f} s") from None
    if proc.returncode != 0:
        raise NotProvisioned(f"{what} failed (exit {proc.returncode}): {proc.stderr.strip()[-800:]}")
    return proc


def _sha256_file(path: Path) -> str:
    h = hashlib.sha256()
    with path.open("rb") as fh:
        for block in iter(lambda: fh.read(1 << 20), b""):
            h.update(block)
    return h.hexdigest()


def _unmount_under(root: Path) -> None:
    """The second stage mounts /proc and /sys inside the root; a failed one may leave them there."""
    inside = str(root.resolve()) + "/"
    with open("/proc/mounts") as fh:
        points = [ln.split()[1] for ln in fh if ln.split()[1].startswith(inside)]
    for point in sorted(points, reverse=True):
        subprocess.run(["umount", "-l", point], capture_output=True, timeout=60)


def load_as_arm64(root: Path, tag: str, work: Path, created_by: str) -> None:
    """`root` as a one-layer arm64 image named `tag`: a docker-archive (manifest, config, layer) loaded
    with `docker load`, since `docker import` writes the host's architecture into the configuration."""
    layer = work / "layer.tar"
    _run(["tar", "-C", str(root), "--numeric-owner", "-cf", str(layer), "."], "tar of the root", 900)
    config = {
        "architecture": "arm64",
        "variant": "v8",
        "os": "linux",
        "created": "2026-01-01T00:00:00Z",
        "config": {"Env": [f"PATH={PATH}"], "Cmd": ["/bin/bash"]},
        "rootfs": {"type": "layers", "diff_ids": [f"sha256:{_sha256_file(layer)}"]},
        "history": [{"created": "2026-01-01T00:00:00Z", "created_by": created_by}],
    }
    config_bytes = json.dumps(config, sort_keys=True).encode()
    config_name = hashlib.sha256(config_bytes).hexdigest() + ".json"
    manifest = json.dumps([{"Config": config_name, "RepoTags": [tag], "Layers": ["layer.tar"]}]).encode()
    archive = work / "image.tar"
    with tarfile.open(archive, "w") as tf:
        for name, data in (("manifest.json", manifest), (config_name, config_bytes)):
            info = tarfile.TarInfo(name)
            info.size = len(data)
            tf.addfile(info, io.BytesIO(data))
        tf.add(layer, "layer.tar")
    layer.unlink()
    _run(["docker", "load", "-i", str(archive)], f"docker load of {tag}", 900)


def build_rootfs(timings: dict[str, float], timeout: float = 1800) -> None:
    """debootstrap's first stage on the host, its second stage under qemu, loaded as ROOTFS_TAG."""
    if shutil.which("debootstrap") is None:
        raise NotProvisioned("debootstrap is missing (apt-get install debootstrap: .ci/run does it)")
    with tempfile.TemporaryDirectory(prefix="sparkenv-rootfs-arm64-", dir="/var/tmp") as tmp:
        root = Path(tmp) / "rootfs"
        try:
            started = time.monotonic()
            first = ["debootstrap", "--arch=arm64", "--foreign", "--variant=minbase", f"--include={INCLUDE}"]
            _run([*first, SUITE, str(root), bh.debian_mirror()], "debootstrap --foreign (arm64)", timeout)
            timings["debootstrap first stage (host)"] = time.monotonic() - started
            started = time.monotonic()
            second = ["chroot", str(root), "/debootstrap/debootstrap", "--second-stage"]
            _run(second, "debootstrap --second-stage under qemu", timeout)
            timings["debootstrap second stage (emulated)"] = time.monotonic() - started
            started = time.monotonic()
            shutil.rmtree(root / "var/cache/apt/archives", ignore_errors=True)
            (root / "var/cache/apt/archives/partial").mkdir(parents=True, exist_ok=True)
            how = f"debootstrap --arch=arm64 --variant=minbase --include={INCLUDE} {SUITE} (tests/)"
            load_as_arm64(root, ROOTFS_TAG, Path(tmp), how)
            timings["root loaded as an arm64 image"] = time.monotonic() - started
        finally:
            _unmount_under(root)


def _torch_dist() -> dict[str, bytes]:
    """NGC's torch as installed: an NGC version label, torch/version.py naming CUDA 13, and
    libtorch_cuda.so, an aarch64 ELF that needs libcudart.so.13 (which lives in CUDA_LIB, not here)."""
    libs = bh.cuda13_libs(CROSS_GCC)
    version = bh.PROVIDES["torch"]
    files = {
        "torch/lib/libtorch_cuda.so": libs["torch/lib/libtorch_cuda.so"],
        "torch/__init__.py": f"__version__ = {version!r}\n".encode(),
        "torch/version.py": f"__version__ = {version!r}\ncuda = {CUDA_MINOR!r}\n".encode(),
    }
    dist = artifacts.dist_info("torch", version, (), files, tag=TORCH_WHEEL_TAG, purelib=False)
    return {**dist, "cuda/libcudart.so.13": libs["torch/lib/libcudart.so.13"]}


def standin_context() -> dict[str, bytes]:
    ctx: dict[str, bytes] = {"nvidia_entrypoint.sh": bh.ENTRYPOINT_SH.encode()}
    for path, data in _torch_dist().items():
        ctx[path if path.startswith("cuda/") else f"site/{path}"] = data
    for name, version in bh.PROVIDES.items():
        if name != "torch":
            for path, data in bh.fake_dist(name, version).items():
                ctx[f"site/{path}"] = data
    ctx["cuda.conf"] = f"{CUDA_LIB}\n".encode()
    ctx["constraint.txt"] = "".join(f"{k}=={v}\n" for k, v in bh.CONSTRAINED.items()).encode()
    ctx["10-banner.txt"] = b"== NGC stand-in, arm64 (sparkenv tests) ==\n"
    ctx["20-env.sh"] = b'export NGC_STANDIN_PART=sourced\necho "entrypoint.d: 20-env.sh sourced"\n'
    ctx["Dockerfile"] = f"""FROM {ROOTFS_TAG}
COPY site/ {bh.SITE}/
COPY cuda/ {CUDA_LIB}/
COPY cuda.conf /etc/ld.so.conf.d/000_cuda.conf
COPY constraint.txt /etc/pip/constraint.txt
COPY nvidia_entrypoint.sh /opt/nvidia/nvidia_entrypoint.sh
COPY 10-banner.txt 20-env.sh /opt/nvidia/entrypoint.d/
RUN ldconfig
ENV NVIDIA_PYTORCH_VERSION={NGC_RELEASE} CUDA_VERSION={CUDA_VERSION} PIP_CONSTRAINT=/etc/pip/constraint.txt \\
    PIP_BREAK_SYSTEM_PACKAGES=1 PATH={PATH}
ENTRYPOINT ["/opt/nvidia/nvidia_entrypoint.sh"]
""".encode()
    return ctx


def _has(client, tag: str) -> bool:  # type: ignore[no-untyped-def]
    from docker.errors import ImageNotFound

    try:
        client.images.get(tag)
        return True
    except ImageNotFound:
        return False


def ensure_standin(client, timings: dict[str, float] | None = None) -> str:  # type: ignore[no-untyped-def]
    """STANDIN_TAG, built when absent (its root too, when ROOTFS_TAG is absent)."""
    timings = {} if timings is None else timings
    if _has(client, STANDIN_TAG):
        return STANDIN_TAG
    problem = emulation_problem()
    if problem:
        raise NotProvisioned(problem)
    if not _has(client, ROOTFS_TAG):
        build_rootfs(timings)
    started = time.monotonic()
    client.images.build(
        fileobj=bh.context_tar(standin_context()),
        custom_context=True,
        tag=STANDIN_TAG,
        platform="linux/arm64",
        rm=True,
        forcerm=True,
        timeout=600,
    )
    timings["NGC markers layer (docker build, emulated ldconfig)"] = time.monotonic() - started
    return STANDIN_TAG


def main() -> int:
    """.ci/run's provisioning step: the images by tag, built when absent, with the time of each step."""
    import docker

    started = time.monotonic()
    timings: dict[str, float] = {}
    try:
        ensure_standin(docker.from_env(timeout=600), timings)
    except NotProvisioned as exc:
        print(f"tests/arm64_standin.py: {exc}", file=sys.stderr)
        return 1
    for step, seconds in timings.items():
        print(f"tests/arm64_standin.py: {step}: {seconds:.0f} s")
    print(f"tests/arm64_standin.py: {STANDIN_TAG} ready ({time.monotonic() - started:.0f} s)")
    return 0


if __name__ == "__main__":
    sys.exit(main())

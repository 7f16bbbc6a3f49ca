"""sparkenv's own runtime for an image: a wheel of the installed sparkenv plus the wheels of its runtime
dependencies for the image's Python and CPU, pinned to the versions installed here (the tested set).

Both are cached under $XDG_CACHE_HOME/sparkenv (a rebuild with nothing changed builds and downloads
nothing, and the bytes stay identical, so Docker's layer cache holds).
"""

from __future__ import annotations

import hashlib
import os
import subprocess
import sys
from dataclasses import dataclass
from importlib import metadata
from pathlib import Path

from packaging.requirements import Requirement
from packaging.utils import canonicalize_name

from sparkenv.environment.markers import applies
from sparkenv.errors import ServiceMissing, SparkenvError

# Not carried into images: uv is only for `sparkenv lock`, which runs on the host.
LEFT_OUT = {"uv"}
DOWNLOAD_TIMEOUT = 600.0


@dataclass(frozen=True)
class Target:
    python: str  # "3.12"
    machine: str  # "aarch64" | "x86_64"
    glibc: str  # "2.39"

    @property
    def key(self) -> str:
        return f"cp{self.python.replace('.', '')}-{self.machine}-glibc{self.glibc}"

    def marker_env(self) -> dict[str, str]:
        from sparkenv.environment.markers import marker_environment

        return marker_environment(self.machine, self.python)

    def platforms(self) -> list[str]:
        """pip download --platform does not expand manylinux tags below the one named: name them all."""
        major, minor = (int(x) for x in (self.glibc or "2.17").split(".")[:2])
        tags = [f"manylinux_{major}_{m}_{self.machine}" for m in range(minor, 16, -1)]
        return [*tags, f"manylinux2014_{self.machine}", f"linux_{self.machine}"]


def cache_dir() -> Path:
    from sparkenv import cache

    return cache.folder()


def package_dir() -> Path:
    """The folder of the sparkenv package this process runs: site-packages/sparkenv for an installed
    sparkenv, <checkout>/sparkenv for an editable one. Both are what the image gets."""
    return Path(__file__).resolve().parents[1]


def _package_files(root: Path) -> list[tuple[str, Path]]:
    """(path in the wheel, file) for every file of the package, sorted; byte code and symlinked folders
    (sparkenv/dockerfiles points at the checkout's dockerfiles/: templates the image never reads) left out."""
    out: list[tuple[str, Path]] = []
    for folder, dirs, files in os.walk(root):
        dirs[:] = sorted(d for d in dirs if d != "__pycache__" and not (Path(folder) / d).is_symlink())
        for name in files:
            path = Path(folder) / name
            if path.suffix in (".pyc", ".pyo") or path.is_symlink() or name.startswith(".nfs"):
                continue
            out.append(("sparkenv/" + path.relative_to(root).as_posix(), path))
    return sorted(out)


def _dist_info() -> tuple[str, dict[str, bytes]]:
    """The installed distribution's version and the dist-info files a wheel carries (METADATA and the
    entry points); RECORD, INSTALLER and direct_url.json describe this install, not the wheel."""
    try:
        dist = metadata.distribution("sparkenv")
    except metadata.PackageNotFoundError:
        raise SparkenvError(
            f"{package_dir()}: sparkenv runs without being installed (no sparkenv dist-info): install it "
            "with pip install . (or -e .) so that sparkenv build knows its version and dependencies"
        ) from None
    # From a checkout (`python -m sparkenv` there) the metadata found first may be the egg-info that
    # setuptools leaves in the tree: PKG-INFO, same format.
    text = dist.read_text("METADATA") or dist.read_text("PKG-INFO")
    if not text or not dist.version:
        raise SparkenvError(
            f"{getattr(dist, '_path', 'sparkenv')}: sparkenv's metadata is unreadable: "
            "reinstall it (pip install .)"
        )
    files = {"METADATA": text.encode()}
    entry_points = dist.read_text("entry_points.txt")
    if entry_points:
        files["entry_points.txt"] = entry_points.encode()
    return dist.version, files


_WHEEL_FILE = b"Wheel-Version: 1.0\nGenerator: sparkenv build\nRoot-Is-Purelib: true\nTag: py3-none-any\n"


def sparkenv_wheel() -> Path:
    """A py3-none-any wheel of the sparkenv this process runs, from its installed files (it is pure
    Python): the same code whether it was installed from a wheel, an index or editable. Reproducible
    (sorted, fixed dates), cached by the hash of its contents, so Docker's layer cache holds."""
    import base64
    import zipfile

    version, info_files = _dist_info()
    members: list[tuple[str, bytes]] = [
        (name, path.read_bytes()) for name, path in _package_files(package_dir())
    ]
    info = f"sparkenv-{version}.dist-info"
    members += [(f"{info}/{name}", data) for name, data in sorted(info_files.items())]
    members.append((f"{info}/WHEEL", _WHEEL_FILE))
    h = hashlib.sha256()
    for name, data in members:
        h.update(name.encode() + b"\0" + data + b"\0")
    out = cache_dir() / "wheels" / h.hexdigest()[:16]
    wheel = out / f"sparkenv-{version}-py3-none-any.whl"
    if wheel.is_file():
        return wheel
    record = []
    for name, data in members:
        digest = base64.urlsafe_b64encode(hashlib.sha256(data).digest()).rstrip(b"=").decode()
        record.append(f"{name},sha256={digest},{len(data)}")
    record.append(f"{info}/RECORD,,")
    members.append((f"{info}/RECORD", ("\n".join(record) + "\n").encode()))
    import io

    from sparkenv import outputs

    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w", zipfile.ZIP_DEFLATED) as zf:
        for name, data in members:
            zi = zipfile.ZipInfo(name, date_time=(1980, 1, 1, 0, 0, 0))
            zi.external_attr = 0o644 << 16
            zi.compress_type = zipfile.ZIP_DEFLATED
            zf.writestr(zi, data)
    outputs.write_one(wheel, buffer.getvalue(), make_parents=True)  # whole or not at all
    return wheel


def requirements_closure(target: Target) -> dict[str, str]:
    """sparkenv's runtime dependencies, recursively, markers evaluated for the image: name -> version
    installed here."""
    env = target.marker_env()
    pins: dict[str, str] = {}
    todo = ["sparkenv"]
    while todo:
        name = todo.pop()
        try:
            dist = metadata.distribution(name)
        except metadata.PackageNotFoundError:
            raise SparkenvError(
                f"sparkenv's dependency {name} is not installed here: pip install --force-reinstall sparkenv"
            ) from None
        for text in dist.requires or []:
            req = Requirement(text)
            if not applies(req.marker, env):
                continue
            key = canonicalize_name(req.name)
            if key in LEFT_OUT or key in pins:
                continue
            try:
                pins[key] = metadata.version(req.name)
            except metadata.PackageNotFoundError:
                raise SparkenvError(
                    f"sparkenv's dependency {req.name} is not installed here: "
                    "pip install --force-reinstall sparkenv"
                ) from None
            todo.append(req.name)
    return dict(sorted(pins.items()))


def dependency_wheels(target: Target, timeout: float = DOWNLOAD_TIMEOUT) -> list[Path]:
    """Wheels of the closure for the image's Python and CPU, downloaded once per (target, pins)."""
    pins = requirements_closure(target)
    pinned = [f"{k}=={v}" for k, v in pins.items()]
    key = hashlib.sha256("\n".join(pinned).encode()).hexdigest()[:16]
    out = cache_dir() / "runtime" / f"{target.key}-{key}"
    if (out / ".complete").is_file():
        return sorted(out.glob("*.whl"))
    out.mkdir(parents=True, exist_ok=True)
    cmd = [sys.executable, "-m", "pip", "download", "--no-deps", "--only-binary=:all:", "-q", "-d", str(out)]
    cmd += ["--python-version", target.python, "--implementation", "cp"]
    cmd += ["--abi", f"cp{target.python.replace('.', '')}", "--abi", "abi3", "--abi", "none"]
    for plat in target.platforms():
        cmd += ["--platform", plat]
    from sparkenv import children

    try:
        proc = children.spawn([*cmd, *pinned], text=True)  # its own session, killed with it on a timeout
    except OSError as exc:
        raise ServiceMissing(f"cannot run pip to download sparkenv's runtime wheels: {exc}") from None
    try:
        _, stderr = proc.communicate(timeout=timeout)
    except subprocess.TimeoutExpired:
        raise ServiceMissing(
            f"downloading sparkenv's runtime wheels took over {timeout:.0f} s: is the index reachable?"
        ) from None
    finally:
        children.stop(proc)
    if proc.returncode != 0:
        last = (stderr.strip().splitlines() or ["no output"])[-1]
        raise ServiceMissing(
            f"cannot download sparkenv's runtime wheels for Python {target.python} {target.machine} "
            f"({last}); the host's pip needs the package index (set PIP_CERT behind a TLS proxy)"
        )
    (out / ".complete").write_text("\n".join(pinned) + "\n")
    return sorted(out.glob("*.whl"))


def sha256(path: Path) -> str:
    h = hashlib.sha256()
    with path.open("rb") as fh:
        for block in iter(lambda: fh.read(1 << 20), b""):
            h.update(block)
    return h.hexdigest()


def requirements_txt(wheels: list[Path], folder: str) -> str:
    """A hashed requirements file that installs exactly these wheels, offline, from `folder`."""
    from packaging.utils import parse_wheel_filename

    lines = [f"--find-links {folder}"]
    for w in sorted(wheels, key=lambda p: p.name):
        name, version, _, _ = parse_wheel_filename(w.name)
        lines.append(f"{name}=={version} --hash=sha256:{sha256(w)}")
    return "\n".join(lines) + "\n"

"""sparkenv's own runtime for an image: a wheel built from the checkout plus the wheels of its runtime
dependencies for the image's Python and CPU, pinned to the versions installed here (the tested set).

Both are cached under $XDG_CACHE_HOME/sparkenv (a rebuild with nothing changed builds and downloads
nothing, and the bytes stay identical, so Docker's layer cache holds).
"""

from __future__ import annotations

import hashlib
import os
import shutil
import subprocess
import sys
from dataclasses import dataclass
from importlib import metadata
from pathlib import Path

from packaging.markers import Marker
from packaging.requirements import Requirement
from packaging.utils import canonicalize_name

from sparkenv.errors import ServiceMissing, SparkenvError

# Not carried into images: uv is only for `sparkenv lock`, which runs on the host.
LEFT_OUT = {"uv"}
WHEEL_TIMEOUT = 300.0
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
        from sparkenv.rules.markers import marker_environment

        return marker_environment(self.machine, self.python)

    def platforms(self) -> list[str]:
        """pip download --platform does not expand manylinux tags below the one named: name them all."""
        major, minor = (int(x) for x in (self.glibc or "2.17").split(".")[:2])
        tags = [f"manylinux_{major}_{m}_{self.machine}" for m in range(minor, 16, -1)]
        return [*tags, f"manylinux2014_{self.machine}", f"linux_{self.machine}"]


def cache_dir() -> Path:
    base = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(base) / "sparkenv"


def checkout() -> Path:
    """The source tree sparkenv runs from (an editable install or a checkout on sys.path)."""
    root = Path(__file__).resolve().parents[2]
    if not (root / "pyproject.toml").is_file() or not (root / "dockerfiles").is_dir():
        raise SparkenvError(
            f"{root}: not a sparkenv checkout (no pyproject.toml + dockerfiles/): sparkenv build installs "
            "sparkenv from a wheel built from its source; run it from a clone (pip install -e .)"
        )
    return root


def source_hash(root: Path) -> str:
    """Every file that goes into sparkenv's wheel, by content."""
    h = hashlib.sha256()
    files = [root / "pyproject.toml", root / "README.md"]
    files += sorted(p for p in (root / "sparkenv").rglob("*") if p.is_file() and "__pycache__" not in p.parts)
    for p in files:
        if p.suffix in (".pyc",) or not p.exists():
            continue
        h.update(str(p.relative_to(root)).encode() + b"\0" + p.read_bytes() + b"\0")
    return h.hexdigest()[:16]


def sparkenv_wheel(root: Path) -> Path:
    """`pip wheel --no-deps` of the checkout, reproducible (SOURCE_DATE_EPOCH), cached
    by the hash of its sources."""
    out = cache_dir() / "wheels" / source_hash(root)
    found = sorted(out.glob("sparkenv-*.whl"))
    if found:
        return found[0]
    tmp = out.with_name(out.name + f".tmp{os.getpid()}")
    shutil.rmtree(tmp, ignore_errors=True)
    tmp.mkdir(parents=True)
    env = {**os.environ, "SOURCE_DATE_EPOCH": "315532800", "PIP_NO_INPUT": "1"}
    cmd = [sys.executable, "-m", "pip", "wheel", "--no-deps", "-q", "-w", str(tmp)]
    try:
        proc = subprocess.run(
            [*cmd, str(root)], capture_output=True, text=True, timeout=WHEEL_TIMEOUT, env=env, cwd=root
        )
    except subprocess.TimeoutExpired:
        raise SparkenvError(f"{root}: pip wheel took over {WHEEL_TIMEOUT:.0f} s") from None
    built = sorted(tmp.glob("sparkenv-*.whl"))
    if proc.returncode != 0 or not built:
        last = (proc.stderr.strip().splitlines() or ["no output"])[-1]
        shutil.rmtree(tmp, ignore_errors=True)
        raise SparkenvError(f"{root}: building sparkenv's wheel failed: {last}")
    shutil.rmtree(out, ignore_errors=True)
    os.replace(tmp, out)
    return out / built[0].name


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
                f"sparkenv's dependency {name} is not installed here: pip install -e ."
            ) from None
        for text in dist.requires or []:
            req = Requirement(text)
            if req.marker is not None and not Marker(str(req.marker)).evaluate(env):
                continue
            key = canonicalize_name(req.name)
            if key in LEFT_OUT or key in pins:
                continue
            try:
                pins[key] = metadata.version(req.name)
            except metadata.PackageNotFoundError:
                raise SparkenvError(
                    f"sparkenv's dependency {req.name} is not installed here: pip install -e ."
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
    try:
        proc = subprocess.run([*cmd, *pinned], capture_output=True, text=True, timeout=timeout)
    except subprocess.TimeoutExpired:
        raise ServiceMissing(
            f"downloading sparkenv's runtime wheels took over {timeout:.0f} s: is the index reachable?"
        ) from None
    if proc.returncode != 0:
        last = (proc.stderr.strip().splitlines() or ["no output"])[-1]
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
